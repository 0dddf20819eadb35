/**
 * CKB addresses (RFC-0021) ↔ lock scripts without a chain client: full format (0x00), and the
 * deprecated short format for the default sighash/multisig locks. `ckb` mainnet, `ckt` others.
 */
import { ccc } from '@ckb-ccc/core';
import { AddressFormat, addressPayloadFromString } from '@ckb-ccc/core/advanced';

export const SIGHASH_ALL_TYPE_HASH = '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8';
const MULTISIG_TYPE_HASH = '0x5c5069eb0857efc65e1bca0c07df34c31663b3622fd3876c876320fc9634e2a8';
const HASH_TYPES: Record<number, ccc.HashType> = { 0: 'data', 1: 'type', 2: 'data1', 4: 'data2' };

export class AddressError extends Error {
  constructor(
    message: string,
    /** What the address parser said, when it refused the string itself. */
    readonly reason?: string,
  ) {
    super(message);
  }
}

export function addressToScript(address: string): ccc.Script {
  let parsed: ReturnType<typeof addressPayloadFromString>;
  try {
    parsed = addressPayloadFromString(address);
  } catch (e) {
    const reason = (e as Error).message;
    throw new AddressError(`invalid CKB address '${address.slice(0, 120)}': ${reason}`, reason);
  }
  const p = Uint8Array.from(parsed.payload);
  if (parsed.format === AddressFormat.Full) {
    const hashType = HASH_TYPES[p[32] as number];
    if (p.length < 33 || !hashType) throw new AddressError(`invalid full-format CKB address '${address}'`);
    return ccc.Script.from({ codeHash: p.subarray(0, 32), hashType, args: p.subarray(33) });
  }
  if (parsed.format === AddressFormat.Short && p.length === 21) {
    const codeHash = p[0] === 0 ? SIGHASH_ALL_TYPE_HASH : p[0] === 1 ? MULTISIG_TYPE_HASH : undefined;
    if (codeHash) return ccc.Script.from({ codeHash, hashType: 'type', args: p.subarray(1) });
  }
  throw new AddressError(`unsupported CKB address format in '${address}'`);
}

export function scriptToAddress(script: ccc.ScriptLike, prefix = 'ckt'): string {
  return new ccc.Address(ccc.Script.from(script), prefix).toString();
}

/** The default lock of a secp256k1 key's blake160 args. */
export function sighashLock(args: ccc.HexLike): ccc.Script {
  return ccc.Script.from({ codeHash: SIGHASH_ALL_TYPE_HASH, hashType: 'type', args });
}
