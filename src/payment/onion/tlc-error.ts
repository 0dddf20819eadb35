/**
 * `TlcErr`, the payload of an onion error packet, with the reference's `TlcErrorCode` values and
 * names (`docs/reference/fiber-routing-protocol.md` §1.6, `fiber-rpc.md` §2.7).
 */

import {
  type Bytes,
  fixed,
  fixvec,
  MoleculeError,
  option,
  readFixvec,
  readOption,
  readTable,
  readUintLe,
  readUnion,
  table,
  uintLe,
  union,
} from '../../codec/index.ts';
import {
  type ChannelUpdate,
  decodeChannelUpdate,
  decodeOutPoint,
  encodeChannelUpdate,
  encodeOutPoint,
  type OutPoint,
} from '../../graph/index.ts';

export const TLC_ERROR_CODES = {
  TemporaryNodeFailure: 0x2002,
  PermanentNodeFailure: 0x6002,
  RequiredNodeFeatureMissing: 0x6003,
  InvalidOnionVersion: 0xc004,
  InvalidOnionHmac: 0xc005,
  InvalidOnionKey: 0xc006,
  TemporaryChannelFailure: 0x1007,
  PermanentChannelFailure: 0x4008,
  RequiredChannelFeatureMissing: 0x4009,
  UnknownNextPeer: 0x400a,
  AmountBelowMinimum: 0x100b,
  FeeInsufficient: 0x100c,
  IncorrectTlcExpiry: 0x100d,
  ExpiryTooSoon: 0x400e,
  IncorrectOrUnknownPaymentDetails: 0x400f,
  InvoiceExpired: 0x4010,
  InvoiceCancelled: 0x4011,
  FinalIncorrectExpiryDelta: 0x0012,
  FinalIncorrectTlcAmount: 0x0013,
  ChannelDisabled: 0x1014,
  ExpiryTooFar: 0x4015,
  InvalidOnionPayload: 0x4016,
  HoldTlcTimeout: 0x4017,
  InvalidOnionError: 0xc019,
  IncorrectTlcDirection: 0x401a,
} as const;

export type TlcErrorCodeName = keyof typeof TLC_ERROR_CODES;

const NAME_OF = new Map<number, TlcErrorCodeName>(
  Object.entries(TLC_ERROR_CODES).map(([k, v]) => [v, k as TlcErrorCodeName]),
);

export const TLC_ERROR_FLAGS = { BADONION: 0x8000, PERM: 0x4000, NODE: 0x2000, UPDATE: 0x1000 } as const;

export function tlcErrorName(code: number): TlcErrorCodeName | undefined {
  return NAME_OF.get(code);
}

export type TlcErrData =
  | { type: 'ChannelFailed'; channelOutpoint: OutPoint; channelUpdate: ChannelUpdate | null; nodeId: Bytes }
  | { type: 'NodeFailed'; nodeId: Bytes }
  | { type: 'TrampolineFailed'; nodeId: Bytes; innerErrorPacket: Bytes };

export interface TlcErr {
  code: TlcErrorCodeName;
  extra: TlcErrData | null;
}

export function encodeTlcErr(e: TlcErr): Bytes {
  let extra: Bytes | null = null;
  if (e.extra?.type === 'ChannelFailed') {
    extra = union(
      0,
      table([
        encodeOutPoint(e.extra.channelOutpoint),
        option(e.extra.channelUpdate ? encodeChannelUpdate(e.extra.channelUpdate) : null),
        fixed(e.extra.nodeId, 33, 'node_id'),
      ]),
    );
  } else if (e.extra?.type === 'NodeFailed') {
    extra = union(1, table([fixed(e.extra.nodeId, 33, 'node_id')]));
  } else if (e.extra?.type === 'TrampolineFailed') {
    extra = union(2, table([fixed(e.extra.nodeId, 33, 'node_id'), fixvec(e.extra.innerErrorPacket)]));
  }
  return table([uintLe(BigInt(TLC_ERROR_CODES[e.code]), 2), option(extra)]);
}

/** Strict decode of the whole buffer; an unknown error code is malformed, as in the reference. */
export function decodeTlcErr(b: Bytes): TlcErr {
  const [c, x] = readTable(b, 'TlcErr', 2);
  const codeValue = Number(readUintLe(c!, 2, 'error_code'));
  const code = NAME_OF.get(codeValue);
  if (!code) throw new MoleculeError(`TlcErr: unknown error code 0x${codeValue.toString(16)}`);
  const raw = readOption(x!);
  if (raw === null) return { code, extra: null };
  const { id, body } = readUnion(raw, 'TlcErrData', 3);
  if (id === 0) {
    const [o, u, n] = readTable(body, 'ChannelFailed', 3);
    const update = readOption(u!);
    return {
      code,
      extra: {
        type: 'ChannelFailed',
        channelOutpoint: decodeOutPoint(o!),
        channelUpdate: update === null ? null : decodeChannelUpdate(update),
        nodeId: fixed(n!, 33, 'node_id').slice(),
      },
    };
  }
  if (id === 1) {
    const [n] = readTable(body, 'NodeFailed', 1);
    return { code, extra: { type: 'NodeFailed', nodeId: fixed(n!, 33, 'node_id').slice() } };
  }
  const [n, p] = readTable(body, 'TrampolineFailed', 2);
  return {
    code,
    extra: {
      type: 'TrampolineFailed',
      nodeId: fixed(n!, 33, 'node_id').slice(),
      innerErrorPacket: readFixvec(p!, 'inner_error_packet').slice(),
    },
  };
}

/** The node named by the error's extra data (the erring node), if any. */
export function erringNodeOf(e: TlcErr): Bytes | null {
  return e.extra?.nodeId ?? null;
}

export function tryDecodeTlcErr(b: Bytes): TlcErr | null {
  try {
    return decodeTlcErr(b);
  } catch {
    return null;
  }
}
