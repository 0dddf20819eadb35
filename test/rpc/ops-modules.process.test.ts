/**
 * pubsub, admin and prof through a real node: store-change subscriptions over WebSocket, an
 * online backup taken under write load that restores to a working node, and a CPU profile.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NodeProcess, startNode, tempDir } from '../helpers/node-process.ts';
import { wsClient } from '../helpers/ws-client.ts';

const MODULES = ['info', 'invoice', 'pubsub', 'admin', 'prof'];

function preimage(i: number): string {
  return '0x' + i.toString(16).padStart(64, '0');
}

async function until(cond: () => boolean, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let node: NodeProcess;
beforeAll(async () => {
  node = await startNode({ config: { rpc: { listening_addr: '127.0.0.1:0', enabled_modules: MODULES } } });
});
afterAll(async () => {
  await node.stop();
});

describe('pubsub', () => {
  it('delivers invoice changes to every subscriber until it unsubscribes', async () => {
    const a = await wsClient(node.url);
    const b = await wsClient(node.url);
    const subA = (await a.call('subscribe_store_changes')).result;
    const subB = (await b.call('subscribe_store_changes')).result;
    expect(subA).not.toBe(subB);

    const created = await node.call('new_invoice', [
      { amount: '0x64', currency: 'Fibd', payment_preimage: preimage(1) },
    ]);
    const hash = created.result.invoice.data.payment_hash;
    await until(() => a.notes.length >= 2 && b.notes.length >= 2, 'two notifications each');
    for (const [client, sub] of [
      [a, subA],
      [b, subB],
    ] as const) {
      const results = client.notes.map((n) => {
        expect(n.method).toBe('store_changes');
        expect(n.params.subscription).toBe(sub);
        return n.params.result;
      });
      expect(results).toContainEqual({ PutCkbInvoiceStatus: { payment_hash: hash, invoice_status: 'Open' } });
      expect(results).toContainEqual({ PutPreimage: { payment_hash: hash, payment_preimage: preimage(1) } });
    }

    expect((await b.call('unsubscribe_store_changes', [subA])).result).toBe(false); // not b's
    expect((await b.call('unsubscribe_store_changes', [subB])).result).toBe(true);
    const before = b.notes.length;
    await node.call('cancel_invoice', [{ payment_hash: hash }]);
    await until(
      () => a.notes.some((n) => n.params.result.PutCkbInvoiceStatus?.invoice_status === 'Cancelled'),
      'the cancellation',
    );
    expect(b.notes.length).toBe(before);
    a.close();
    b.close();
  });

  it('refuses subscriptions over plain HTTP and bad unsubscribe params', async () => {
    const r = await node.call('subscribe_store_changes');
    expect(r.error).toMatchObject({ code: -32000, message: expect.stringContaining('WebSocket') });
    const bad = await node.call('unsubscribe_store_changes', [{ id: 1 }]);
    expect(bad.error?.code).toBe(-32602);
  });
});

describe('admin backup', () => {
  it('takes a consistent backup under write load that restores to a working node', async () => {
    // A storm of invoice writes while the backup runs.
    let writing = true;
    const hashes: string[] = [];
    const storm = (async () => {
      for (let i = 100; writing; i++) {
        const r = await node.call('new_invoice', [
          { amount: '0x1', currency: 'Fibd', payment_preimage: preimage(i) },
        ]);
        expect(r.error).toBeUndefined();
        hashes.push(r.result.invoice.data.payment_hash);
      }
    })();
    await until(() => hashes.length > 20, 'some writes');
    const committedBefore = hashes.length;
    const dest = path.join(tempDir('strand-backup-'), 'b1');
    const r = await node.call('backup_now', [{ path: dest }]);
    writing = false;
    await storm;
    expect(r.error).toBeUndefined();
    expect(r.result.path).toBe(dest);
    expect(Number(r.result.size)).toBeGreaterThan(0);
    for (const f of ['fiber/sk', 'fiber/store/strand.db', 'ckb/key', 'backup.json']) {
      expect(fs.existsSync(path.join(dest, f)), f).toBe(true);
    }

    const again = await node.call('backup_now', [{ path: dest }]);
    expect(again.error).toMatchObject({ code: -32000, message: expect.stringContaining('not empty') });
    const relative = await node.call('backup_now', [{ path: 'relative/dir' }]);
    expect(relative.error?.message).toContain('must be absolute');

    // Restore: start a node on the backup directory itself.
    const original = (await node.call('node_info')).result.pubkey;
    const restored = await startNode({
      dir: dest,
      config: { rpc: { listening_addr: '127.0.0.1:0', enabled_modules: MODULES } },
    });
    try {
      expect((await restored.call('node_info')).result.pubkey).toBe(original);
      // Everything committed before the backup began is in it; what was written during it is
      // either wholly there or wholly absent.
      let present = 0;
      for (const [i, hash] of hashes.entries()) {
        const got = await restored.call('get_invoice', [{ payment_hash: hash }]);
        if (i < committedBefore) expect(got.result?.status, `invoice ${i}`).toBe('Open');
        if (got.result) {
          expect(got.result.status).toBe('Open');
          present++;
        } else {
          expect(got.error?.message).toBe('invoice not found');
        }
      }
      expect(present).toBeGreaterThanOrEqual(committedBefore);
      // The restored node keeps working: it writes to its restored store.
      const fresh = await restored.call('new_invoice', [
        { amount: '0x2', currency: 'Fibd', payment_preimage: preimage(99_999) },
      ]);
      expect(fresh.error).toBeUndefined();
    } finally {
      await restored.stop();
    }
  });

  it('refuses paths under /proc, /sys and /dev at once and keeps answering', async () => {
    for (const bad of ['/proc/self/x', '/sys/x/y', '/dev/x', `${node.dir}/../../proc/self/y`]) {
      const r = await node.call('backup_now', [{ path: bad }]);
      expect(r.error, bad).toMatchObject({
        code: -32000,
        message: expect.stringMatching(/^InvalidParameter: path must not be under \/(proc|sys|dev)/),
      });
    }
    expect((await node.call('node_info')).result.pubkey).toBeTruthy();
  });
});

describe('prof', () => {
  it('writes a CPU profile under the node directory', async () => {
    const r = await node.call('pprof', [{ duration_secs: '0x1' }]);
    expect(r.error).toBeUndefined();
    expect(r.result.path.startsWith(path.join(node.dir, 'prof'))).toBe(true);
    const profile = JSON.parse(fs.readFileSync(r.result.path, 'utf8'));
    expect(Array.isArray(profile.nodes)).toBe(true);
    expect(profile.endTime).toBeGreaterThan(profile.startTime);
    const bad = await node.call('pprof', [{ duration_secs: '0x0' }]);
    expect(bad.error).toMatchObject({ code: -32000, message: expect.stringContaining('between 1 and') });
  });
});
