/**
 * JSON-RPC fuzz against a real node process (on a dev chain, every module but `prof`, whose valid
 * calls sleep for minutes): generated bodies over HTTP (`fuzz-inputs.ts`). Every answer is a
 * well-formed JSON-RPC response with a known code and never "Internal error"; afterwards the node
 * answers, and nothing changed but the invoices the fuzz itself created: channels, payments,
 * peers, graph and node counters are as before, and every store change published meanwhile
 * belongs to one of those invoices. `FUZZ_RUNS` / `npm run fuzz:rpc` for long runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODULE_NAMES } from '../../src/rpc/method.ts';
import { type DevchainProcess, startChannelNode, startDevchain } from '../channel/process-helpers.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import { tempDir } from '../helpers/node-process.ts';
import { wsClient } from '../helpers/ws-client.ts';
import { bodies, methodCatalogue } from './fuzz-inputs.ts';

// Every module but prof (its valid calls sleep for minutes) and cch (mounted only with the cch service and an LND).
const MODULES = MODULE_NAMES.filter((m) => m !== 'prof' && m !== 'cch');
const CODES = new Set([-32700, -32600, -32601, -32602, -32000, -32999]);

let chain: DevchainProcess;
let node: NodeProcess;
let occupied: string;
beforeAll(async () => {
  chain = await startDevchain([1]);
  node = await startChannelNode(1, chain.url, {}, undefined, {}, MODULES);
  occupied = tempDir('strand-fuzz-occupied-');
  fs.writeFileSync(path.join(occupied, 'keep'), '');
}, 120_000);
afterAll(async () => {
  await node?.stop();
  await chain?.stop();
  if (occupied) fs.rmSync(occupied, { recursive: true, force: true });
});

async function rpc(method: string, params: unknown[] = []) {
  const r = await node.call(method, params);
  expect(r.error, method).toBeUndefined();
  return r.result;
}

/** What the fuzz must not change (node_info without its clock-free counters only). */
async function snapshot() {
  const info = await rpc('node_info');
  return {
    channels: await rpc('list_channels', [{ include_closed: true }]),
    payments: await rpc('list_payments', [{}]),
    peers: await rpc('list_peers'),
    nodes: await rpc('graph_nodes', [{}]),
    graphChannels: await rpc('graph_channels', [{}]),
    counts: [info.channel_count, info.pending_channel_count, info.peers_count],
  };
}

function checkAnswer(status: number, text: string, created: Set<string>): void {
  expect([200, 204, 400, 413, 415], text.slice(0, 200)).toContain(status);
  if (text === '') return;
  const body = JSON.parse(text);
  for (const r of Array.isArray(body) ? body : [body]) {
    expect(r.jsonrpc).toBe('2.0');
    if ('error' in r) {
      expect(CODES.has(r.error.code), JSON.stringify(r.error).slice(0, 300)).toBe(true);
      expect(r.error.message.length).toBeLessThanOrEqual(1001);
      // The long inputs are runs of Q (strings) and p (paths): a message repeats at most 200.
      expect(r.error.message, r.error.message.slice(0, 300)).not.toMatch(/Q{201}|p{201}/);
    } else {
      expect('result' in r).toBe(true);
      const hash = r.result?.invoice?.data?.payment_hash;
      if (typeof hash === 'string' && typeof r.result.invoice_address === 'string') created.add(hash);
    }
  }
}

describe('JSON-RPC fuzz', () => {
  it('answers every generated body cleanly and changes nothing it did not report', async () => {
    const methods = methodCatalogue().filter((m) => m.name !== 'pprof');
    expect(methods.length).toBeGreaterThan(35);
    const ws = await wsClient(node.url);
    expect((await ws.call('subscribe_store_changes')).result).toBeTypeOf('number');
    const before = await snapshot();
    const created = new Set<string>();

    await fc.assert(
      fc.asyncProperty(bodies(methods, occupied), async (body) => {
        const r = await node.post(body);
        checkAnswer(r.status, r.text, created);
      }),
      { numRuns: fuzzRuns(2000) },
    );

    expect(await snapshot()).toEqual(before);
    expect(fs.readdirSync(occupied)).toEqual(['keep']);
    // Let the last notifications arrive: a new invoice of our own is the marker.
    const marker = (await rpc('new_invoice', [{ amount: '0x1', currency: 'Fibd' }])).invoice.data
      .payment_hash;
    created.add(marker);
    const end = Date.now() + 10_000;
    while (!ws.notes.some((n) => JSON.stringify(n).includes(marker)) && Date.now() < end)
      await new Promise((r) => setTimeout(r, 20));
    for (const n of ws.notes) {
      const change = n.params.result as Record<string, { payment_hash: string }>;
      const [kind, detail] = Object.entries(change)[0]!;
      expect(['PutCkbInvoiceStatus', 'PutPreimage'], kind).toContain(kind);
      expect(created.has(detail.payment_hash), JSON.stringify(change)).toBe(true);
    }
    ws.close();
  });
});
