/**
 * Channel scripts by network: testnet's preset resolved against a testnet node's answers (its
 * type-id cell deps found through the indexer), `fiber.scripts` overriding it by name, the dev
 * chain's scripts from a real dev chain, and the refusals of bad entries.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { NETWORKS, TYPE_ID_CODE_HASH } from '../../src/chain/networks.ts';
import {
  ChannelScriptsUnavailable,
  channelScriptsSource,
  readScriptsConfig,
  resolveUdtWhitelist,
  ScriptsConfigError,
} from '../../src/chain/scripts.ts';
import { readUdtWhitelist, UdtWhitelist } from '../../src/chain/udt-whitelist.ts';
import { type DevchainRpcServer, startDevchainRpc } from '../../src/devchain/rpc/server.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { FixtureChain, fixture } from './fixture-chain.ts';

let chain: FixtureChain | undefined;
afterEach(async () => {
  await chain?.down();
  chain = undefined;
});

const AUTH_TESTNET = '0x12c569a258dd9c5bd99f632bb8314b1263b90921ba31496467580d6b79dd14a7';

describe('channel scripts of a network', () => {
  it('testnet: fnn v0.8 code hashes, each type-id dep the live cell the indexer finds, ckb-auth as is', async () => {
    chain = await FixtureChain.start(fixture('testnet.json'));
    const client = createChainClient({
      rpcUrl: chain.url,
      attempts: 1,
      channelScripts: channelScriptsSource('testnet'),
    });
    const s = await client.channelScripts();
    expect(s.fundingLock).toEqual({
      codeHash: '0x6c67887fe201ee0c7853f1682c0b77c0e6214044c156c7558269390a8afa6d7c',
      hashType: 'type',
      cellDeps: [
        { outPoint: { txHash: `0x${'f1'.repeat(32)}`, index: 0n }, depType: 'code' },
        { outPoint: { txHash: AUTH_TESTNET, index: 0n }, depType: 'code' },
      ],
    });
    expect(s.commitmentLock.codeHash).toBe(
      '0x740dee83f87c6f309824d8fd3fbdd3c8380ee6fc9acc90b1a748438afcdf81d8',
    );
    expect(s.commitmentLock.cellDeps[0]).toEqual({
      outPoint: { txHash: `0x${'c1'.repeat(32)}`, index: 0n },
      depType: 'code',
    });
    // Looked up by the type-id script, exactly; resolved once, then cached.
    const searched = chain.calls('get_cells').map((p) => (p[0] as { script: { args: string } }).script);
    expect(searched).toEqual([
      {
        code_hash: TYPE_ID_CODE_HASH,
        hash_type: 'type',
        args: '0x3cb7c0304fe53f75bb5727e2484d0beae4bd99d979813c6fc97c3cca569f10f6',
      },
      {
        code_hash: TYPE_ID_CODE_HASH,
        hash_type: 'type',
        args: '0xf7e458887495cf70dd30d1543cad47dc1dfe9d874177bf19291e4db478d5751b',
      },
    ]);
    await client.channelScripts();
    expect(chain.calls('get_cells')).toHaveLength(2);
    expect(chain.calls('get_dev_scripts')).toHaveLength(0);
  });

  it('a fiber.scripts entry replaces the preset entry of its name only', async () => {
    chain = await FixtureChain.start(fixture('testnet.json'));
    const override = readScriptsConfig([
      {
        name: 'FundingLock',
        script: { code_hash: `0x${'ab'.repeat(32)}`, hash_type: 'data1', args: '0x' },
        cell_deps: [
          {
            cell_dep: { out_point: { tx_hash: `0x${'cd'.repeat(32)}`, index: '0x2' }, dep_type: 'dep_group' },
          },
        ],
      },
    ]);
    const client = createChainClient({
      rpcUrl: chain.url,
      attempts: 1,
      channelScripts: channelScriptsSource('testnet', override),
    });
    const s = await client.channelScripts();
    expect(s.fundingLock).toEqual({
      codeHash: `0x${'ab'.repeat(32)}`,
      hashType: 'data1',
      cellDeps: [{ outPoint: { txHash: `0x${'cd'.repeat(32)}`, index: 2n }, depType: 'depGroup' }],
    });
    expect(s.commitmentLock.codeHash).toBe(
      '0x740dee83f87c6f309824d8fd3fbdd3c8380ee6fc9acc90b1a748438afcdf81d8',
    );
    expect(chain.calls('get_cells')).toHaveLength(1);
  });

  it('a type-id cell the chain does not have: refused with its args, and tried again on the next call', async () => {
    chain = await FixtureChain.start(fixture('testnet.json'));
    chain.replace('get_cells', {
      request: { method: 'get_cells' },
      response: { result: { last_cursor: '0x', objects: [] } },
    });
    const client = createChainClient({
      rpcUrl: chain.url,
      attempts: 1,
      channelScripts: channelScriptsSource('testnet'),
    });
    const err = await client.channelScripts().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelScriptsUnavailable);
    expect((err as Error).message).toContain(
      '0x3cb7c0304fe53f75bb5727e2484d0beae4bd99d979813c6fc97c3cca569f10f6',
    );
    chain.replace('get_cells', ...fixture('testnet.json').filter((e) => e.request.method === 'get_cells'));
    expect((await client.channelScripts()).fundingLock.cellDeps).toHaveLength(2);
  });

  it("testnet's UDT whitelist: RUSD's type-id dep resolved for transactions, the configured dep kept for gossip", async () => {
    chain = await FixtureChain.start(fixture('testnet.json'));
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    const configured = readUdtWhitelist(NETWORKS.testnet.udtWhitelist);
    expect(UdtWhitelist.cellDeps(configured.entries[0])).toEqual([]);
    const errors: string[] = [];
    const resolved = await resolveUdtWhitelist(client, configured, (name) => errors.push(name));
    expect(errors).toEqual([]);
    expect(UdtWhitelist.cellDeps(resolved.entries[0])).toEqual([
      { outPoint: { txHash: `0x${'d5'.repeat(32)}`, index: 0n }, depType: 'code' },
    ]);
    expect(resolved.entries[0]?.deps).toEqual(configured.entries[0]?.deps);
    // Not on the chain: reported, and the entry kept without it.
    chain.replace('get_cells', {
      request: { method: 'get_cells' },
      response: { result: { last_cursor: '0x', objects: [] } },
    });
    const missing = await resolveUdtWhitelist(client, configured, (name) => errors.push(name));
    expect(errors).toEqual(['RUSD']);
    expect(UdtWhitelist.cellDeps(missing.entries[0])).toEqual([]);
  });

  it('mainnet preset: fnn v0.8 mainnet code hashes and chain hash', () => {
    const entries = readScriptsConfig(NETWORKS.mainnet.scripts);
    expect(entries.map((e) => [e.name, e.codeHash])).toEqual([
      ['FundingLock', '0xe45b1f8f21bff23137035a3ab751d75b36a981deec3e7820194b9c042967f4f1'],
      ['CommitmentLock', '0x2d45c4d3ed3e942f1945386ee82a5d1b7e4bb16d7fe1ab015421174ab747406c'],
    ]);
    expect(NETWORKS.mainnet.chainHash).toBe(
      '0x92b197aa1fba0f63633922c61c92375c9c074a93e85963554f5499fe1450d0e5',
    );
  });

  describe('dev', () => {
    let t: TestChain;
    let server: DevchainRpcServer;
    afterEach(async () => {
      await server?.close();
      t?.close();
    });

    it('takes both locks from a real dev chain (get_dev_scripts); an override still wins', async () => {
      t = openTestChain();
      server = await startDevchainRpc(t.chain, '127.0.0.1', 0);
      const dev = await createChainClient({ rpcUrl: server.url, attempts: 1 }).call<{
        funding_lock: { script: { code_hash: string } };
        commitment_lock: { script: { code_hash: string } };
      }>('get_dev_scripts');
      const plain = await createChainClient({ rpcUrl: server.url, attempts: 1 }).channelScripts();
      expect(plain.fundingLock.codeHash).toBe(dev.funding_lock.script.code_hash);
      expect(plain.commitmentLock.codeHash).toBe(dev.commitment_lock.script.code_hash);
      expect(plain.fundingLock.cellDeps.length).toBeGreaterThan(0);
      const over = readScriptsConfig([
        {
          name: 'CommitmentLock',
          script: { code_hash: `0x${'ee'.repeat(32)}`, hash_type: 'type', args: '0x' },
          cell_deps: [],
        },
      ]);
      const mixed = await createChainClient({
        rpcUrl: server.url,
        attempts: 1,
        channelScripts: channelScriptsSource('dev', over),
      }).channelScripts();
      expect(mixed.fundingLock.codeHash).toBe(dev.funding_lock.script.code_hash);
      expect(mixed.commitmentLock.codeHash).toBe(`0x${'ee'.repeat(32)}`);
    });
  });

  it('refuses bad fiber.scripts entries, naming the field', () => {
    const refused = (v: unknown) => {
      try {
        readScriptsConfig(v);
      } catch (e) {
        expect(e).toBeInstanceOf(ScriptsConfigError);
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    const script = { code_hash: `0x${'ab'.repeat(32)}`, hash_type: 'type', args: '0x' };
    expect(refused({})).toBe('scripts: expected a list of {name, script, cell_deps}');
    expect(refused([{ name: 'Funding', script, cell_deps: [] }])).toBe(
      'scripts[0].name: expected FundingLock or CommitmentLock, got "Funding"',
    );
    expect(
      refused([{ name: 'FundingLock', script: { ...script, code_hash: '0x12' }, cell_deps: [] }]),
    ).toMatch(/^scripts\[0\]\.script\.code_hash: expected 0x \+ 32 bytes hex/);
    expect(refused([{ name: 'FundingLock', script, cell_deps: [{ cell_dep: { out_point: {} } }] }])).toMatch(
      /^scripts\[0\]\.cell_deps\[0\]\.cell_dep\.out_point\.tx_hash: /,
    );
    expect(refused([{ name: 'FundingLock', script }])).toBe('scripts[0].cell_deps: expected a list');
    expect(
      refused([
        { name: 'FundingLock', script, cell_deps: [] },
        { name: 'FundingLock', script, cell_deps: [] },
      ]),
    ).toBe('scripts[1].name: FundingLock is listed twice');
  });
});
