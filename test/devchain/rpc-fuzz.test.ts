import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevchainRpcServer, startDevchainRpc } from '../../src/devchain/rpc/server.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';
import { openTestChain, type TestChain } from './helpers.ts';

let t: TestChain;
let server: DevchainRpcServer;
beforeAll(async () => {
  t = openTestChain();
  server = await startDevchainRpc(t.chain, '127.0.0.1', 0);
});
afterAll(async () => {
  await server.close();
  t.close();
});

const METHODS = [
  'get_tip_header',
  'get_header',
  'get_header_by_number',
  'get_block',
  'get_block_by_number',
  'get_block_hash',
  'get_block_median_time',
  'get_transaction',
  'get_live_cell',
  'send_transaction',
  'dry_run_transaction',
  'get_cells',
  'get_cells_capacity',
  'get_transactions',
  'generate_epochs',
  'faucet',
  'increase_time',
];

/** JSON values shaped a bit like CKB params, to get past the first checks now and then. */
const hexish = fc.oneof(
  fc.constantFrom('0x', '0x0', '0x1', '0x00', '0xffffffffffffffffff', '0x-1', `0x${'ab'.repeat(32)}`),
  fc.string({ maxLength: 70 }),
);
const script = fc.record({
  code_hash: hexish,
  hash_type: fc.constantFrom('data', 'type', 'data1', 'data2', 'bogus'),
  args: hexish,
});
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    hexish,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    script,
    fc.record(
      { script, script_type: fc.constantFrom('lock', 'type', 'x'), filter: tie('v') },
      { requiredKeys: [] },
    ),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(
      fc.constantFrom(
        'version',
        'inputs',
        'outputs',
        'since',
        'previous_output',
        'tx_hash',
        'index',
        'capacity',
      ),
      tie('v'),
      { maxKeys: 4 },
    ),
  ),
})).v;

describe('dev chain RPC under hostile params', () => {
  it('answers every malformed call with a typed error, never an internal one, and keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...METHODS),
        fc.array(value, { maxLength: 5 }),
        async (method, params) => {
          const res = await fetch(server.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
          });
          expect(res.status).toBe(200);
          const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
          if (body.error) expect(body.error.code, body.error.message).not.toBe(-1);
        },
      ),
      { numRuns: fuzzRuns(400) },
    );
    const tip = await fetch(server.url, {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'get_tip_block_number', params: [] }),
    });
    expect(((await tip.json()) as { result: string }).result).toMatch(/^0x/);
  });
});
