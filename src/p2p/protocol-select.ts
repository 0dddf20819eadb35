/**
 * Tentacle protocol selection (`protocol_select.mol`): on each new yamux stream the opener sends
 * one length-delimited `ProtocolInfo{name, support_versions}`; the acceptor answers with the
 * name it received and the chosen version, or no version when it does not speak the protocol.
 */
import { mol } from '../codec/index.ts';
import { decodeOrMalformed, malformed } from './errors.ts';

const ProtocolInfo = mol.table(
  'ProtocolInfo',
  { name: mol.utf8(), supportVersions: mol.dynvec('StringVec', mol.utf8()) },
  { compatible: true },
);
export type ProtocolInfo = mol.Infer<typeof ProtocolInfo>;

/** Selection messages are tiny; anything larger is hostile (tentacle allows 8 MiB). */
export const MAX_SELECT_FRAME = 64 * 1024;
/** Fiber's message cap on protocols 42 and 43 (`MAX_SERVICE_PROTOCOAL_DATA_SIZE`, 130 KiB). */
export const MAX_PROTOCOL_FRAME = 133_120;

export const FIBER_PROTOCOL_ID = 42;
export const GOSSIP_PROTOCOL_ID = 43;
export const DEFAULT_VERSIONS = ['0.0.1'];

export function protocolName(id: number): string {
  return `/p2p/${id}`;
}

export const encodeProtocolInfo = (p: ProtocolInfo): Uint8Array => ProtocolInfo.encode(p);

export function decodeProtocolInfo(buf: Uint8Array): ProtocolInfo {
  const info = decodeOrMalformed(() => ProtocolInfo.decode(buf));
  if (info.supportVersions.length > 64) throw malformed('ProtocolInfo: too many versions');
  return info;
}

/**
 * tentacle's `select_version`: walk both ascending lists from the end, stepping back on the side
 * whose entry compares larger (byte order), and return the first equal pair.
 */
export function selectVersion(local: string[], remote: string[]): string | undefined {
  let i = local.length - 1;
  let j = remote.length - 1;
  while (i >= 0 && j >= 0) {
    const a = local[i]!;
    const b = remote[j]!;
    if (a === b) return a;
    if (a > b) i--;
    else j--;
  }
  return undefined;
}
