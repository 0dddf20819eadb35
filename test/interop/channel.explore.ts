/**
 * Exploration (not part of any suite): fiber-js and a Strand node process on one dev chain
 * (`--spec strand`), fiber-js opens a channel to Strand; prints what each side says.
 * Run: node --import tsx test/interop/channel.explore.ts
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { rpc, startChannelNode } from '../channel/process-helpers.ts';
import { STRAND_BIN, tempDir } from '../helpers/node-process.ts';
import { startReferenceNode } from './reference-node.ts';

const FIX = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');
const dir = tempDir('strand-explore-');
const chain = spawn(
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
    `${FIX}/1/ckb/plain_key:5000`,
    '--fund',
    `${FIX}/2/ckb/plain_key:5000`,
  ],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
let out = '';
const url = await new Promise<string>((resolve) => {
  chain.stdout.on('data', (d) => {
    out += d;
    const m = /devchain rpc (\S+)/.exec(out);
    if (m) resolve(m[1]!);
  });
  chain.stderr.on('data', (d) => process.stderr.write(d));
});
console.log('chain', url, out);
/** The chain's FundingLock / CommitmentLock, for fiber-js to use with the same cell deps as Strand. */
function chainScripts() {
  const m = /scripts (\{.*\})/.exec(out);
  if (!m) throw new Error('the dev chain printed no scripts');
  const all = JSON.parse(m[1]!);
  const one = (name: string, key: string) => ({
    name,
    codeHash: all[key].script.code_hash,
    hashType: all[key].script.hash_type,
    cellDeps: all[key].cell_deps.map((d: any) => ({
      txHash: d.out_point.tx_hash,
      index: Number(d.out_point.index),
    })),
  });
  return [one('FundingLock', 'funding_lock'), one('CommitmentLock', 'commitment_lock')];
}
const strand = await startChannelNode(1, url, {}, undefined, {}, [
  'info',
  'peer',
  'channel',
  'dev',
  'graph',
  'payment',
  'invoice',
]);
const info = await rpc(strand, 'node_info', undefined);
console.log('strand', info.addresses, info.chain_hash);
const spec = fs.readFileSync(
  path.resolve(import.meta.dirname, '../../src/devchain/strand-dev-spec.toml'),
  'utf8',
);
for (let i = 0; i < 100 && !/scripts \{.*\}/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
const ref = await startReferenceNode({
  fiberSecretKey: new Uint8Array(fs.readFileSync(`${FIX}/2/fiber/sk`)),
  ckbSecretKey: Buffer.from(fs.readFileSync(`${FIX}/2/ckb/plain_key`, 'utf8').trim(), 'hex'),
  chainSpec: spec,
  ckbRpcUrl: url,
  scripts: chainScripts(),
});
try {
  const rinfo = await ref.call('node_info');
  console.log('ref chain', rinfo.chain_hash);
  const ws = (info.addresses as string[]).map((a) => a.replace(/\/tcp\/(\d+)\//, '/tcp/$1/ws/'))[0]!;
  await ref.call('connect_peer', [{ address: ws }]);
  await new Promise((r) => setTimeout(r, 3000));
  console.log('strand peers', JSON.stringify(await rpc(strand, 'list_peers', undefined)));
  const mode = process.argv[2] ?? 'ref-opens';
  if (mode === 'ref-opens') {
    const r = await ref
      .call('open_channel', [{ pubkey: info.pubkey, funding_amount: '0xba43b7400', public: true }])
      .catch((e) => String(e));
    console.log('ref open_channel', JSON.stringify(r));
  } else {
    // 500 CKB: fnn auto-accepts an opener's funding (reserve excluded) of at least 100 CKB.
    const r = await rpc(strand, 'open_channel', {
      pubkey: String(rinfo.pubkey),
      funding_amount: '0xba43b7400',
      public: true,
    }).catch((e) => String(e));
    console.log('strand open_channel', JSON.stringify(r));
  }
  const states = async (i: number | string) => {
    const a = await rpc(strand, 'list_channels', {}).catch((e) => String(e));
    const b = await ref.call('list_channels', [{}]).catch((e) => String(e));
    console.log(
      i,
      'strand:',
      JSON.stringify(a.channels?.map((c: any) => [c.state, c.failure_detail, c.local_balance])),
      'ref:',
      JSON.stringify((b as any).channels?.map((c: any) => [c.state, c.local_balance])),
    );
    const ready = (x: any) =>
      x?.state_name === 'CHANNEL_READY' || x === 'ChannelReady' || x?.state_name === 'ChannelReady';
    return ready(a.channels?.[0]?.state) && ready((b as any).channels?.[0]?.state);
  };
  let ready = false;
  for (let i = 0; i < 20 && !ready; i++) {
    await new Promise((r) => setTimeout(r, 3000));
    ready = await states(i);
  }
  // Level 4: a keysend payment each way over the channel, the opener paying first.
  const poll = async (who: string, hash: string | undefined, get: (h: string) => Promise<any>) => {
    for (let i = 0; i < 8 && hash; i++) {
      await new Promise((r) => setTimeout(r, 2000));
      const p = await get(hash).catch((e) => String(e));
      console.log(who, 'payment', JSON.stringify(p?.status ?? p), p?.failed_error ?? '');
      if (p?.status === 'Success' || p?.status === 'Failed') break;
    }
  };
  const refPays = async (amount: string) => {
    const r: any = await ref
      .call('send_payment', [{ target_pubkey: info.pubkey, amount, keysend: true }])
      .catch((e) => String(e));
    console.log('ref send_payment', JSON.stringify(r).slice(0, 300));
    await poll('ref', r?.payment_hash, (h) => ref.call('get_payment', [{ payment_hash: h }]));
    await states('after ref->strand');
  };
  const strandPays = async (amount: string) => {
    const r: any = await rpc(strand, 'send_payment', {
      target_pubkey: String(rinfo.pubkey),
      amount,
      keysend: true,
    }).catch((e) => String(e));
    console.log('strand send_payment', JSON.stringify(r).slice(0, 300));
    await poll('strand', r?.payment_hash, (h) => rpc(strand, 'get_payment', { payment_hash: h }));
    await states('after strand->ref');
  };
  if (ready) {
    // 10 CKB from the opener, then 5 of them back.
    const [first, second] = mode === 'ref-opens' ? [refPays, strandPays] : [strandPays, refPays];
    await first('0x3b9aca00');
    await second('0x1dcd6500');
    // Level 5: a cooperative close asked by Strand (ClosingSigned both ways).
    const list: any = await rpc(strand, 'list_channels', {});
    const id = list.channels?.[0]?.channel_id;
    // A third argument `force`: Strand force-closes instead (its commitment, completed only now).
    const force = process.argv[3] === 'force';
    const r = await rpc(strand, 'shutdown_channel', { channel_id: id, ...(force ? { force } : {}) }).catch(
      (e) => String(e),
    );
    console.log('strand shutdown_channel', JSON.stringify(r));
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 3000));
      const a: any = await rpc(strand, 'list_channels', { include_closed: true }).catch((e) => String(e));
      const b: any = await ref.call('list_channels', [{ include_closed: true }]).catch((e) => String(e));
      const sa = a.channels?.[0]?.state;
      const sb = b.channels?.[0]?.state;
      console.log('close', i, JSON.stringify(sa), JSON.stringify(sb));
      if (sa?.state_name === 'CLOSED' && sb?.state_name === 'Closed') break;
    }
  }
} finally {
  console.log('--- ref logs (errors/warns)');
  for (const l of ref.logs.filter((l) => /error|warn|fail|refus/i.test(l)).slice(-40))
    console.log(l.slice(0, 400));
  console.log('--- page errors', ref.errors.slice(0, 5));
  console.log('--- strand log tail');
  console.log(
    strand
      .output()
      .split('\n')
      .filter((l: string) => /"level":(40|50)/.test(l))
      .slice(-20)
      .join('\n'),
  );
  await ref.close();
  await strand.stop();
  chain.kill();
}
