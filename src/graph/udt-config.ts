/**
 * The node's UDT whitelist (`ckb.udt_whitelist`, fiber-rpc.md §2.6 JSON) in the molecule form a
 * NodeAnnouncement carries. UDT `name` and `args` travel as raw UTF-8 (args may be a regex such
 * as `0x.*`); cell deps are `{cell_dep: {out_point, dep_type}}` or `{type_id: script}`; a dep of
 * neither form is left out.
 */
import { HASH_TYPE_BYTE } from '../codec/molecule.ts';
import type { MolScript, UdtArgInfo, UdtDep } from './messages.ts';

const utf8 = new TextEncoder();

interface ScriptJson {
  code_hash: string;
  hash_type: string;
  args: string;
}

function hex32(s: unknown): Uint8Array | null {
  if (typeof s !== 'string' || !/^(0x)?[0-9a-fA-F]{64}$/.test(s)) return null;
  return new Uint8Array(Buffer.from(s.replace(/^0x/, ''), 'hex'));
}

function molScript(s: unknown): MolScript | null {
  const j = s as Partial<ScriptJson> | null;
  const codeHash = hex32(j?.code_hash);
  const hashType = HASH_TYPE_BYTE[String(j?.hash_type)];
  if (
    !codeHash ||
    hashType === undefined ||
    typeof j?.args !== 'string' ||
    !/^0x([0-9a-fA-F]{2})*$/.test(j.args)
  )
    return null;
  return { codeHash, hashType, args: new Uint8Array(Buffer.from(j.args.slice(2), 'hex')) };
}

function udtDep(d: unknown): UdtDep | null {
  const j = d as {
    cell_dep?: { out_point?: { tx_hash?: string; index?: string | number }; dep_type?: string };
    type_id?: unknown;
  };
  if (j?.cell_dep) {
    const txHash = hex32(j.cell_dep.out_point?.tx_hash);
    const rawIndex = j.cell_dep.out_point?.index;
    const index = typeof rawIndex === 'string' ? Number.parseInt(rawIndex, 16) : rawIndex;
    if (!txHash || typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > 0xffff_ffff)
      return null;
    return {
      type: 'cellDep',
      outPoint: { txHash, index },
      depType: j.cell_dep.dep_type === 'dep_group' ? 1 : 0,
    };
  }
  const script = molScript(j?.type_id);
  return script ? { type: 'script', script } : null;
}

export function udtCfgInfosFromJson(
  list: { name: string; script: ScriptJson; cell_deps?: unknown[]; auto_accept_amount?: bigint }[],
): UdtArgInfo[] {
  const out: UdtArgInfo[] = [];
  for (const u of list) {
    const codeHash = hex32(u.script.code_hash);
    const hashType = HASH_TYPE_BYTE[u.script.hash_type];
    if (!codeHash || hashType === undefined) continue;
    out.push({
      name: utf8.encode(u.name),
      script: { codeHash, hashType, args: utf8.encode(u.script.args) },
      autoAcceptAmount: u.auto_accept_amount ?? null,
      cellDeps: (u.cell_deps ?? []).map(udtDep).filter((d): d is UdtDep => d !== null),
    });
  }
  return out;
}
