/**
 * Reading a force close's settlement from the chain (process tests): the closer's commitment
 * committed, then every settlement of the cells under its commitment lock with its unlock entry.
 */
import { ccc } from '@ckb-ccc/core';
import { type ChainClient, createChainClient } from '../../src/chain/client.ts';
import { rpc, until } from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';

/**
 * `a` opens a channel to `b` with `params` (`open_channel`'s); its id once both list it
 * CHANNEL_READY. Channels the two already had are told apart.
 *
 * Right after a restart both nodes may redial each other at once; the session that loses the
 * tie-break is closed and the reconnection aborts an opening still unsigned (as it must: the
 * peer may never have seen it). Such an opening is retried, up to twice; any other failure fails.
 */
export async function openNewChannel(a: NodeProcess, b: NodeProcess, params: Record<string, unknown>) {
  const known = new Set(
    (await rpc(a, 'list_channels', { include_closed: true })).channels.map((c: any) => c.channel_id),
  );
  let id: string | undefined;
  for (let attempt = 0; !id; attempt++) {
    await rpc(a, 'open_channel', params);
    const fresh = await until(
      'new channel ready (or aborted) at A',
      () => rpc(a, 'list_channels', { include_closed: true }),
      (x) =>
        x.channels.some(
          (c: any) => !known.has(c.channel_id) && ['CHANNEL_READY', 'CLOSED'].includes(c.state.state_name),
        ),
    );
    const ch = fresh.channels.find(
      (c: any) => !known.has(c.channel_id) && ['CHANNEL_READY', 'CLOSED'].includes(c.state.state_name),
    );
    known.add(ch.channel_id);
    if (ch.state.state_name === 'CHANNEL_READY') id = ch.channel_id as string;
    else if (attempt >= 2 || !/reconnected before the funding was signed/.test(ch.failure_detail ?? ''))
      throw new Error(`the opening failed: ${JSON.stringify(ch)}`);
  }
  await until(
    'ready at B',
    () => rpc(b, 'list_channels', {}),
    (x) => x.channels.some((c: any) => c.channel_id === id && c.state.state_name === 'CHANNEL_READY'),
  );
  return id;
}

/**
 * `closer` force-closes the channel: its latest commitment goes on chain. Returns the committed
 * commitment and the search key of every cell under its commitment lock (by args prefix).
 */
export async function forceCloseOnChain(chainUrl: string, closer: NodeProcess, id: string) {
  const client = createChainClient({ rpcUrl: chainUrl });
  const listed = (await rpc(closer, 'list_channels', {})).channels.find((c: any) => c.channel_id === id);
  const commitmentHash = listed.latest_commitment_transaction_hash as string;
  await rpc(closer, 'shutdown_channel', { channel_id: id, force: true });
  const commitment = (await until(
    'commitment committed',
    () => client.getTransaction(commitmentHash),
    (x) => x?.tx_status.status === 'committed',
  )) as any;
  const lock = commitment.transaction.outputs[0].lock;
  const search = {
    script: { ...lock, args: lock.args.slice(0, 2 + 72) },
    script_type: 'lock' as const,
    script_search_mode: 'prefix' as const,
  };
  return { capacity: BigInt(commitment.transaction.outputs[0].capacity) as bigint, search };
}

export type LockSearch = Awaited<ReturnType<typeof forceCloseOnChain>>['search'];

/** The spending transaction of each cell spent under the commitment lock so far (one per input). */
export async function spentInputs(client: ChainClient, search: LockSearch): Promise<string[]> {
  const rows = await client.call<any>('get_transactions', [search, 'asc', '0x64']);
  return rows.objects.filter((r: any) => r.io_type === 'input').map((r: any) => r.tx_hash as string);
}

/**
 * Once nothing is left under the commitment lock: each settlement's unlock — the settlement
 * entry's kind (0 a TLC, 0xfe / 0xff the two parties' shares), its preimage flag, the preimage
 * when it carries one — with its transaction.
 */
export async function settlementsOnChain(chainUrl: string, search: LockSearch) {
  const client = createChainClient({ rpcUrl: chainUrl });
  await until(
    'all settled',
    () => client.getCells(search, 'asc', 10),
    (x) => x.objects.length === 0,
    90_000,
  );
  const out: { kind: number; preimageFlag: number; preimage: string | null; tx: any }[] = [];
  for (const h of new Set(await spentInputs(client, search))) {
    const tx = (await client.getTransaction(h)) as any;
    const w = ccc.bytesFrom(tx.transaction.witnesses[0]);
    const entry = w.subarray(17 + 1 + 85 * (w[17] as number) + 72);
    out.push({
      kind: entry[0] as number,
      preimageFlag: entry[1] as number,
      preimage: entry[1] === 1 ? ccc.hexFrom(entry.subarray(67, 99)) : null,
      tx,
    });
  }
  return out;
}

export const kinds = (xs: { kind: number }[]) => xs.map((x) => x.kind).sort((x, y) => x - y);
