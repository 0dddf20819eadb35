/** A node's stop is bounded: a service that never finishes stopping does not keep the store open. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/node/config.ts';
import { silentLogger } from '../../src/node/log.ts';
import { StrandNode } from '../../src/node/node.ts';
import { openDatabase } from '../../src/store/db.ts';

describe('StrandNode.stop', () => {
  it('closes the store at its deadline when a service hangs, keeping what was committed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-stop-'));
    const config = loadConfig({
      dir,
      env: {},
      flags: { services: 'fiber', 'fiber-listening-addr': '/ip4/127.0.0.1/tcp/0', 'fiber-chain': 'dev' },
    });
    const env = { FIBER_SECRET_KEY_PASSWORD: 'test-password' };
    const node = await StrandNode.start(config, { env, logger: silentLogger() });
    node.db.exec('CREATE TABLE committed (v TEXT)');
    node.db.prepare('INSERT INTO committed VALUES (?)').run('kept');
    // The peers never finish stopping (a socket that never closes, a write that never drains).
    const peers = node.peers!;
    const realStop = peers.stop.bind(peers);
    peers.stop = () => new Promise<void>(() => {});
    expect(await node.stop(200)).toBe(false);
    expect(node.db.open).toBe(false);
    const again = openDatabase(path.join(config.fiberDir, 'store', 'strand.db'), []);
    expect(again.prepare('SELECT v FROM committed').all()).toEqual([{ v: 'kept' }]);
    again.close();
    await realStop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
