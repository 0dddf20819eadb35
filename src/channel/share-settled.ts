/**
 * After a force close of a UDT channel, or of a commitment with TLCs pending, the watchtower
 * settles the commitment cell, not the channel layer: tokens need UDT outputs and wallet capacity
 * (`watchtower/udt-settlement.ts`), and a share must wait until no TLC its side may claim is left
 * (`settlement-script.ts`). The channel only learns when its share is out: every live cell left
 * under the commitment's lock (its args up to the version: the commitment and its continuations)
 * has our party block zeroed.
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { type ChainClient, scriptToJson, txConfirmation } from '../chain/index.ts';
import { parseSettlementScript, scriptAfterWitness } from './settlement-script.ts';
import type { ScriptInfo } from './tx.ts';

/**
 * Whether our share of a commitment (`commitmentArgs`: its 57-byte lock args; `holder`: the
 * commitment is ours) has been settled on chain. Cells whose settlement script cannot be read
 * count as not settled.
 */
export async function shareSettled(
  chain: ChainClient,
  commitmentLock: ScriptInfo,
  commitmentTxHash: string,
  commitmentArgs: Uint8Array,
  holder: boolean,
): Promise<boolean> {
  if ((await txConfirmation(chain, commitmentTxHash)).status !== 'committed') return false;
  const prefix = {
    codeHash: commitmentLock.codeHash,
    hashType: commitmentLock.hashType,
    args: ccc.hexFrom(commitmentArgs.subarray(0, 28)),
  };
  const page = await chain.getCells(
    { script: scriptToJson(prefix), script_type: 'lock', script_search_mode: 'prefix' },
    'asc',
    50,
  );
  for (const c of page.objects) {
    const args = ccc.bytesFrom(c.output.lock.args);
    if (args[56] === 0) return false; // the commitment cell itself: nothing settled yet
    const r = await chain.getTransaction(c.out_point.tx_hash);
    if (!r) return false;
    const tx = cccA.JsonRpcTransformers.transactionTo(r.transaction as cccA.JsonRpcTransaction);
    const script = tx.witnesses.map((w) => scriptAfterWitness(ccc.bytesFrom(w))).find((s) => s !== null);
    const parsed = script ? parseSettlementScript(script) : null;
    if (!parsed) return false;
    const ours = holder ? parsed.party.subarray(0, 36) : parsed.party.subarray(36, 72);
    if (ours.some((b) => b !== 0)) return false;
  }
  return true;
}
