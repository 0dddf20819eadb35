/**
 * A Fiber network for interop levels 3–6: Strand's dev chain with Strand's spec (the Fiber scripts
 * in genesis tx0 outputs 6–8), a `strand node` process funded on it (fixture node 1) and fiber-js
 * 0.8.1 in Chromium (fixture node 2) on the same chain, told the chain's FundingLock and
 * CommitmentLock with their cell deps (`fiber.scripts`), dialled into Strand over WebSocket; and a
 * second Strand node (fixture node 3) connected to the first, for payments over two hops.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { connect, rpc, startChannelNode } from '../channel/process-helpers.ts';
import { type NodeProcess, STRAND_BIN, tempDir } from '../helpers/node-process.ts';
import { type ReferenceNode, startReferenceNode } from './reference-node.ts';

const FIX = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');
const SPEC = path.resolve(import.meta.dirname, '../../src/devchain/strand-dev-spec.toml');

export interface FnnNetwork {
  chainUrl: string;
  strand: NodeProcess;
  /** The second Strand node, connected to `strand` only. */
  strand2: NodeProcess;
  ref: ReferenceNode;
  strandPubkey: string;
  refPubkey: string;
  /**
   * The dev chain's test tokens (a simple UDT and an xUDT), whitelisted on both sides
   * (auto-accepted, no tokens added).
   */
  udt: TokenScript;
  xudt: TokenScript;
  stop(): Promise<void>;
}

/** Test tokens (of each kind) Strand's node and fiber-js hold at the start. */
export const TOKENS = 1000n;

type TokenScript = { code_hash: string; hash_type: string; args: string };

interface ScriptJson {
  script: { code_hash: string; hash_type: string; args?: string };
  cell_deps: { out_point: { tx_hash: string; index: string } }[];
}

async function startChain(
  dir: string,
): Promise<{ proc: ChildProcess; url: string; scripts: Record<string, ScriptJson> }> {
  const proc = spawn(
    process.execPath,
    [
      STRAND_BIN,
      'devchain',
      '-d',
      dir,
      '--spec',
      'strand',
      '--listen',
      '127.0.0.1:0',
      '--block-interval',
      '300',
      '--fund',
      `${FIX}/1/ckb/plain_key:5000:${TOKENS}:${TOKENS}`,
      '--fund',
      `${FIX}/2/ckb/plain_key:5000:${TOKENS}:${TOKENS}`,
      '--fund',
      `${FIX}/3/ckb/plain_key:5000`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const m = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dev chain did not start: ${out}`)), 60_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const found = /devchain rpc (\S+)[\s\S]*?scripts (\{.*\})\n/.exec(out);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    proc.stderr!.on('data', (d) => {
      out += d;
    });
  });
  return { proc, url: m[1]!, scripts: JSON.parse(m[2]!) };
}

/** What fiber-js's `fiber.scripts` needs of one of the chain's scripts. */
const fnnScript = (name: string, s: ScriptJson) => ({
  name,
  codeHash: s.script.code_hash,
  hashType: s.script.hash_type,
  cellDeps: s.cell_deps.map((d) => ({ txHash: d.out_point.tx_hash, index: Number(d.out_point.index) })),
});

export async function startFnnNetwork(): Promise<FnnNetwork> {
  const dir = tempDir('strand-fnn-net-');
  const chain = await startChain(path.join(dir, 'chain'));
  let strand: NodeProcess | undefined;
  let strand2: NodeProcess | undefined;
  let ref: ReferenceNode | undefined;
  const modules = ['info', 'peer', 'channel', 'dev', 'graph', 'payment', 'invoice'];
  const tokens = (['test_udt', 'test_xudt'] as const).map((name) => {
    const t = chain.scripts[name]!;
    return { name, script: { ...t.script, args: t.script.args ?? '0x' }, cellDeps: t.cell_deps };
  });
  try {
    const whitelist = tokens.map((t) => ({
      name: t.name,
      script: t.script,
      cell_deps: t.cellDeps,
      auto_accept_amount: 1,
    }));
    strand = await startChannelNode(1, chain.url, {}, undefined, { udt_whitelist: whitelist }, modules);
    strand2 = await startChannelNode(3, chain.url, {}, undefined, {}, modules);
    ref = await startReferenceNode({
      fiberSecretKey: new Uint8Array(fs.readFileSync(`${FIX}/2/fiber/sk`)),
      ckbSecretKey: Buffer.from(fs.readFileSync(`${FIX}/2/ckb/plain_key`, 'utf8').trim(), 'hex'),
      chainSpec: fs.readFileSync(SPEC, 'utf8'),
      ckbRpcUrl: chain.url,
      scripts: [
        fnnScript('FundingLock', chain.scripts.funding_lock!),
        fnnScript('CommitmentLock', chain.scripts.commitment_lock!),
      ],
      udtWhitelist: tokens.map((t) => ({
        name: t.name,
        codeHash: t.script.code_hash,
        hashType: t.script.hash_type,
        args: t.script.args,
        cellDeps: t.cellDeps.map((d) => ({ txHash: d.out_point.tx_hash, index: Number(d.out_point.index) })),
        autoAcceptAmount: 1n,
      })),
    });
    const info = await rpc(strand, 'node_info', undefined);
    const refInfo = await ref.call('node_info');
    // The listener takes WebSocket on the same port as TCP (fnn's reuse_port_for_websocket).
    const ws = (info.addresses as string[])[0]!.replace(/\/tcp\/(\d+)\//, '/tcp/$1/ws/');
    await ref.call('connect_peer', [{ address: ws }]);
    const end = Date.now() + 30_000;
    while (
      !(await rpc(strand, 'list_peers', undefined)).peers.some(
        (p: { pubkey: string }) => p.pubkey === refInfo.pubkey,
      )
    ) {
      if (Date.now() > end) throw new Error('fiber-js did not connect to Strand');
      await new Promise((r) => setTimeout(r, 300));
    }
    await connect(strand2, strand);
    const s = strand;
    const s2 = strand2;
    const r = ref;
    return {
      chainUrl: chain.url,
      strand: s,
      strand2: s2,
      ref: r,
      strandPubkey: String(info.pubkey),
      refPubkey: String(refInfo.pubkey),
      udt: tokens[0]!.script,
      xudt: tokens[1]!.script,
      async stop() {
        await r.close();
        await s.stop();
        await s2.stop();
        chain.proc.kill();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await ref?.close();
    await strand?.stop();
    await strand2?.stop();
    chain.proc.kill();
    throw e;
  }
}
