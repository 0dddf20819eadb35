/** CKB `Script` between its RPC JSON form and the molecule bytes kept in a UdtScript attribute. */
import { bytesToHex, HASH_TYPE_BYTE, hexToBytes, mol } from '../codec/index.ts';
import { verifyScript } from './molecule.ts';

export type HashTypeName = 'data' | 'type' | 'data1' | 'data2';

export interface ScriptJson {
  code_hash: string;
  hash_type: HashTypeName;
  args: string;
}

export function scriptToMolecule(s: ScriptJson): Uint8Array {
  return mol.Script.encode({
    codeHash: hexToBytes(s.code_hash, 'code_hash', 32),
    hashType: HASH_TYPE_BYTE[s.hash_type]!,
    args: hexToBytes(s.args, 'args'),
  });
}

/** The JSON form of verified molecule Script bytes; unknown hash-type bytes give undefined. */
export function scriptFromMolecule(b: Uint8Array): ScriptJson | undefined {
  verifyScript(b);
  const { codeHash, hashType, args } = mol.Script.decode(b);
  const name = (Object.keys(HASH_TYPE_BYTE) as HashTypeName[]).find((k) => HASH_TYPE_BYTE[k] === hashType);
  if (!name) return undefined;
  return { code_hash: bytesToHex(codeHash), hash_type: name, args: bytesToHex(args) };
}
