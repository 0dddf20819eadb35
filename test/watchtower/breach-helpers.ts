/**
 * The steps every breach test takes with real processes: open a channel and wait until both
 * sides are ready, read the cheater's stored commitment, move money by a dev TLC, publish the
 * old commitment, and wait for the honest side's sweep of it.
 */
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import Database from 'better-sqlite3';
import type { ChainClient } from '../../src/chain/client.ts';
import { deserializeChannel } from '../../src/channel/state.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { rpc, until } from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';

export const hex = (v: bigint) => `0x${v.toString(16)}`;

/** A opens a channel to B with `params`; resolves with its id once both list it ready. */
export async function openReady(a: NodeProcess, b: NodeProcess, params: Record<string, unknown>) {
  await rpc(a, 'open_channel', params);
  const readyAt = (n: NodeProcess, who: string) =>
    until(
      `${who} ready`,
      () => rpc(n, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
  const ready = await readyAt(a, 'A');
  await readyAt(b, 'B');
  return ready.channels[0].channel_id as string;
}

/** The node's stored latest commitment (molecule hex) of its only channel, read from its database. */
export function storedCommitment(node: NodeProcess): { tx: string; hash: string } {
  const db = new Database(path.join(node.dir, 'fiber/store/strand.db'), { readonly: true });
  try {
    const row = db.prepare('SELECT data FROM channels').get() as { data: string };
    const ch = deserializeChannel(row.data);
    return { tx: ch.latestCommitmentTx as string, hash: ch.latestCommitmentTxHash as string };
  } finally {
    db.close();
  }
}

/**
 * `add_tlc`, tried again while the channel's previous round is still finishing: a side may list
 * no pending TLC before the round's last RevokeAndAck reached it, and the RPC refuses a TLC
 * command in that state at once (WaitingTlcAck, as fnn's does).
 */
export async function addTlc(n: NodeProcess, params: Record<string, unknown>): Promise<unknown> {
  const giveUp = Date.now() + 20_000;
  for (;;) {
    try {
      return await rpc(n, 'add_tlc', params);
    } catch (e) {
      if (!/waiting TLC ACK/.test((e as Error).message) || Date.now() > giveUp) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * `amount` from A to B by a dev TLC that B fulfils (two rounds, each revoking A's commitment);
 * resolves once neither side lists a pending TLC.
 */
export async function payByTlc(a: NodeProcess, b: NodeProcess, id: string, amount: bigint, fill = '42') {
  const preimage = `0x${fill.repeat(32)}`;
  await addTlc(a, {
    channel_id: id,
    amount: hex(amount),
    payment_hash: ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage))),
    expiry: hex(BigInt(Date.now() + 3_600_000)),
  });
  await until(
    'TLC committed at B',
    () => rpc(b, 'list_channels', {}),
    (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
  );
  await rpc(b, 'remove_tlc', { channel_id: id, tlc_id: '0x0', reason: { payment_preimage: preimage } });
  for (const [n, who] of [
    [a, 'A'],
    [b, 'B'],
  ] as const)
    await until(
      `TLC removed at ${who}`,
      () => rpc(n, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs.length === 0,
    );
}

/** Sends a stored commitment (with the given dev script deps) and waits until it is committed. */
export async function publishCommitment(
  client: ChainClient,
  commitment: { tx: string },
  deps: ('funding_lock' | 'test_udt')[] = ['funding_lock'],
  /** Run right after the send, before the commitment is committed. */
  meanwhile?: () => Promise<unknown>,
): Promise<{ hash: string; tx: any; capacity: bigint }> {
  const scripts = await client.call<any>('get_dev_scripts');
  const cheat = ccc.Transaction.fromBytes(commitment.tx);
  cheat.cellDeps = deps
    .flatMap((k) => scripts[k].cell_deps)
    .map((d: any) => cccA.JsonRpcTransformers.cellDepTo(d));
  const hash = await client.sendTransaction(cheat);
  await meanwhile?.();
  const committed = (await until(
    'old commitment committed',
    () => client.getTransaction(hash),
    (x) => x?.tx_status.status === 'committed',
  )) as any;
  return { hash, tx: committed.transaction, capacity: BigInt(committed.transaction.outputs[0].capacity) };
}

/** Waits for a cell of exactly `capacity` at `lock` (the swept commitment); returns it and its tx. */
export async function awaitSweep(
  client: ChainClient,
  lock: any,
  capacity: bigint,
  typeFilter?: { code_hash: string; hash_type: string; args: string },
) {
  const query = {
    script: lock,
    script_type: 'lock' as const,
    script_search_mode: 'exact' as const,
    ...(typeFilter ? { filter: { script: typeFilter } } : {}),
  };
  const swept = await until(
    'revocation committed',
    () => client.getCells(query as any, 'desc', 50),
    (x) => x.objects.some((c) => BigInt(c.output.capacity) === capacity),
    60_000,
  );
  const cell = swept.objects.find((c) => BigInt(c.output.capacity) === capacity)!;
  const rev = (await client.getTransaction(cell.out_point.tx_hash)) as any;
  return { cell, rev };
}
