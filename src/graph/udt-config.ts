/**
 * The node's UDT whitelist (read once by `chain/udt-whitelist.ts`) in the molecule form a
 * NodeAnnouncement carries. UDT `name` and `args` travel as raw UTF-8 (args may be a pattern such
 * as `0x.*`); cell deps are out points or type-id scripts.
 */
import type { HashType, UdtScriptRef, UdtWhitelistEntry } from '../chain/index.ts';
import { HASH_TYPE_BYTE } from '../codec/index.ts';
import type { MolScript, UdtArgInfo, UdtDep } from './messages.ts';

const utf8 = new TextEncoder();
const bytes = (hex: string) => new Uint8Array(Buffer.from(hex.slice(2), 'hex'));
const hashTypeByte = (t: HashType) => HASH_TYPE_BYTE[t] as number;

function molScript(s: UdtScriptRef): MolScript {
  return { codeHash: bytes(s.codeHash), hashType: hashTypeByte(s.hashType), args: bytes(s.args) };
}

export function udtCfgInfosFromWhitelist(entries: readonly UdtWhitelistEntry[]): UdtArgInfo[] {
  return entries.map((u) => ({
    name: utf8.encode(u.name),
    script: { codeHash: bytes(u.codeHash), hashType: hashTypeByte(u.hashType), args: utf8.encode(u.args) },
    autoAcceptAmount: u.autoAcceptAmount,
    cellDeps: u.deps.map(
      (d): UdtDep =>
        d.kind === 'cellDep'
          ? {
              type: 'cellDep',
              outPoint: { txHash: bytes(d.txHash), index: d.index },
              depType: d.depType === 'depGroup' ? 1 : 0,
            }
          : { type: 'script', script: molScript(d.script) },
    ),
  }));
}
