/**
 * Tentacle protocol selection (`protocol_select.mol`): on each new yamux stream the opener sends
 * one length-delimited `ProtocolInfo{name, support_versions}`; the acceptor answers with the
 * name it received and the chosen version, or no version when it does not speak the protocol.
 */
import { malformed } from './errors.ts';
import { decodeString, decodeTable, encodeString, encodeTable } from './mol.ts';

export interface ProtocolInfo {
  name: string;
  supportVersions: string[];
}

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

export function encodeProtocolInfo(p: ProtocolInfo): Uint8Array {
  return encodeTable([encodeString(p.name), encodeTable(p.supportVersions.map(encodeString))]);
}

export function decodeProtocolInfo(buf: Uint8Array): ProtocolInfo {
  const f = decodeTable(buf, 2, 'ProtocolInfo');
  const versions = decodeTable(f[1]!, 0, 'ProtocolInfo.support_versions');
  if (versions.length > 64) throw malformed('ProtocolInfo: too many versions');
  return {
    name: decodeString(f[0]!, 'ProtocolInfo.name'),
    supportVersions: versions.map((v, i) => decodeString(v, `ProtocolInfo.support_versions[${i}]`)),
  };
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
