/**
 * The asset a payment moves: CKB, or a UDT named by its type script. An invoice names its asset
 * with a UdtScript attribute (none: CKB); the payer moves that asset and no other, and the receiver
 * settles a TLC only when the channel it came on carries that asset. Assets are compared by the
 * molecule bytes of their script (`udtKey`), so a JSON script and an invoice's bytes compare alike.
 */
import { bytesToHex } from '../codec/index.ts';
import { udtKeyFromJson } from '../graph/index.ts';
import { findAttr, type Invoice, type ScriptJson, scriptFromMolecule } from '../invoice/index.ts';

/** A UDT type script as RPC params and payment requests carry it. */
export type UdtScriptJson = { code_hash: string; hash_type: string; args: string };

/** Canonical key of an asset: the molecule hex of the UDT script, null for CKB. */
export type AssetKey = string | null;

export function invoiceAsset(inv: Invoice): AssetKey {
  const s = findAttr(inv, 'UdtScript')?.script;
  return s ? bytesToHex(s) : null;
}

/** The key of a JSON script; a script that is not valid keeps its JSON text (equal to nothing). */
export function scriptAsset(s: UdtScriptJson | null | undefined): AssetKey {
  if (!s) return null;
  return udtKeyFromJson(s) ?? JSON.stringify(s);
}

/** The invoice's UDT as a payment request names it; null for CKB, undefined if unreadable. */
export function invoiceUdtScript(inv: Invoice): ScriptJson | null | undefined {
  const s = findAttr(inv, 'UdtScript')?.script;
  return s ? scriptFromMolecule(s) : null;
}

/** How an error message names an asset. */
export function describeAsset(key: AssetKey): string {
  if (key === null) return 'CKB';
  if (!key.startsWith('0x')) return `UDT ${key}`;
  let s: ScriptJson | undefined;
  try {
    s = scriptFromMolecule(Buffer.from(key.slice(2), 'hex'));
  } catch {
    s = undefined;
  }
  return s
    ? `UDT {code_hash: ${s.code_hash}, hash_type: ${s.hash_type}, args: ${s.args}}`
    : `UDT script ${key}`;
}
