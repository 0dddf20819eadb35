/**
 * `TlcErr`, the payload of an onion error packet, with the reference's `TlcErrorCode` values and
 * names (`docs/reference/fiber-routing-protocol.md` §1.6, `fiber-rpc.md` §2.7).
 */

import { type Bytes, MoleculeError, mol } from '../../codec/index.ts';
import { ChannelUpdate, OutPoint } from '../../graph/index.ts';

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

const Pubkey = mol.byteArray(33);

const TlcErrData = mol.flatUnion('TlcErrData', {
  ChannelFailed: mol.table('ChannelFailed', {
    channelOutpoint: OutPoint,
    channelUpdate: mol.option(ChannelUpdate),
    nodeId: Pubkey,
  }),
  NodeFailed: mol.table('NodeFailed', { nodeId: Pubkey }),
  TrampolineFailed: mol.table('TrampolineFailed', { nodeId: Pubkey, innerErrorPacket: mol.bytes() }),
});
export type TlcErrData = mol.Infer<typeof TlcErrData>;

/** An unknown error code is malformed, as in the reference. */
const ErrorCode: mol.Schema<TlcErrorCodeName> = mol.map(
  mol.u16,
  (v) => {
    const code = NAME_OF.get(v);
    if (!code) throw new MoleculeError(`TlcErr: unknown error code 0x${v.toString(16)}`);
    return code;
  },
  (name: TlcErrorCodeName) => TLC_ERROR_CODES[name],
);

const TlcErr = mol.table('TlcErr', { code: ErrorCode, extra: mol.option(TlcErrData) });
export type TlcErr = mol.Infer<typeof TlcErr>;

export const encodeTlcErr = (e: TlcErr): Bytes => TlcErr.encode(e);
/** Strict decode of the whole buffer. */
export const decodeTlcErr = (b: Bytes): TlcErr => TlcErr.decode(b);

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
