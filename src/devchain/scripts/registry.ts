/**
 * The one table of natively verified scripts, keyed by the data hash of their code cell. A script
 * (lock or type) is resolved through the transaction's cell deps like CKB does — by data hash for
 * `data*` hash types, by the dep cell's type-script hash for `type` — and the resolved code cell's
 * data hash selects the verifier. Adding a script is one file plus one line here.
 *
 * Strand's own dev-chain script cells hold a short marker instead of a RISC-V binary; their code
 * hash is the marker's data hash, stable across restarts and machines.
 */
import { bytesToHex } from '../../codec/index.ts';
import { ckbHash } from '../../crypto/index.ts';
import { commitmentLock } from './commitment-lock.ts';
import type { ScriptVerifier } from './context.ts';
import { fundingLock } from './funding-lock.ts';
import { sighashAll } from './sighash-all.ts';
import { simpleUdt, xUdt } from './udt.ts';

export interface DevScript {
  /** Name used in configs and logs. */
  id: 'funding_lock' | 'commitment_lock' | 'simple_udt' | 'xudt';
  /** The code cell's data (a marker, see above). */
  data: Uint8Array;
  verifier: ScriptVerifier;
}

const marker = (name: string) => new TextEncoder().encode(`strand-devchain/${name}/v1`);

/** Script cells the dev chain deploys right after genesis, in this order. */
export const DEV_SCRIPTS: DevScript[] = [
  { id: 'funding_lock', data: marker('funding-lock'), verifier: fundingLock },
  { id: 'commitment_lock', data: marker('commitment-lock'), verifier: commitmentLock },
  { id: 'simple_udt', data: marker('simple-udt'), verifier: simpleUdt },
  // The real xUDT is data hash 0x50bd8d66…1b95 (data1); this marker gives the dev chain its own.
  { id: 'xudt', data: marker('xudt'), verifier: xUdt },
];

/** Data hash → verifier. */
export const SCRIPT_VERIFIERS = new Map<string, ScriptVerifier>([
  ['0x709f3fda12f561cfacf92273c57a98fede188a3f1a59b1f888d113f9cce08649', sighashAll],
  ...DEV_SCRIPTS.map((s) => [bytesToHex(ckbHash(s.data)), s.verifier] as [string, ScriptVerifier]),
]);

export function devScriptCodeHash(id: DevScript['id']): string {
  const s = DEV_SCRIPTS.find((d) => d.id === id);
  if (!s) throw new Error(`unknown dev script ${id}`);
  return bytesToHex(ckbHash(s.data));
}
