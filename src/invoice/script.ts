/** CKB `Script` between its RPC JSON form and the molecule bytes kept in a UdtScript attribute. */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { verifyScript } from './molecule.ts';

export type HashTypeName = 'data' | 'type' | 'data1' | 'data2';

export interface ScriptJson {
  code_hash: string;
  hash_type: HashTypeName;
  args: string;
}

const HASH_TYPE_BYTE: Record<HashTypeName, number> = { data: 0, type: 1, data1: 2, data2: 4 };

export function scriptToMolecule(s: ScriptJson): Uint8Array {
  const codeHash = hexToBytes(s.code_hash, 'code_hash', 32);
  const args = hexToBytes(s.args, 'args');
  const total = 16 + 32 + 1 + 4 + args.length;
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, total, true);
  dv.setUint32(4, 16, true);
  dv.setUint32(8, 48, true);
  dv.setUint32(12, 49, true);
  out.set(codeHash, 16);
  out[48] = HASH_TYPE_BYTE[s.hash_type];
  dv.setUint32(49, args.length, true);
  out.set(args, 53);
  return out;
}

/** The JSON form of verified molecule Script bytes; unknown hash-type bytes give undefined. */
export function scriptFromMolecule(b: Uint8Array): ScriptJson | undefined {
  verifyScript(b);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const codeHashAt = dv.getUint32(4, true);
  const hashTypeAt = dv.getUint32(8, true);
  const argsAt = dv.getUint32(12, true);
  const name = (Object.keys(HASH_TYPE_BYTE) as HashTypeName[]).find(
    (k) => HASH_TYPE_BYTE[k] === b[hashTypeAt],
  );
  if (!name) return undefined;
  return {
    code_hash: bytesToHex(b.subarray(codeHashAt, codeHashAt + 32)),
    hash_type: name,
    args: bytesToHex(b.subarray(argsAt + 4)),
  };
}
