/**
 * `strand devnet fund <node|address|lock args> <ckb> [--udt n] [--xudt n]`: the dev chain's faucet
 * sends to a devnet node's wallet or any address, waits for the transaction to commit, and says
 * what happened: the address, the amounts, the transaction and the lock's new CKB balance.
 */
import { addressToScript, SIGHASH_ALL_TYPE_HASH, scriptToAddress } from '../chain/index.ts';
import { SHANNONS_PER_CKB as CKB, toHexQuantity } from '../codec/index.ts';
import type { DevnetDescription } from '../devnet/index.ts';
import { createRpcClient } from '../rpc/index.ts';

/** A dev chain mines a block every second by default; a commit slower than this is a stuck chain. */
const COMMIT_TIMEOUT_MS = 60_000;
/** While the transaction waits for a block, a line this often (a devnet with a slow block interval). */
const PROGRESS_EVERY_MS = 5_000;

export interface FundRequest {
  target: string;
  ckb: bigint;
  udt: bigint;
  xudt: bigint;
  /** Told every few seconds while the transaction is not committed yet. */
  progress?: (line: string) => void;
  progressEveryMs?: number;
}

interface LockJson {
  code_hash: string;
  hash_type: string;
  args: string;
}

/** Sends from the faucet and returns the lines to print. Throws with a message on any failure. */
export async function fundFromFaucet(d: DevnetDescription, req: FundRequest): Promise<string[]> {
  const node = d.nodes.find((n) => n.name === req.target);
  const lock = lockOf(node ? node.wallet_lock_args : req.target);
  const address = scriptToAddress({
    codeHash: lock.code_hash,
    hashType: lock.hash_type as 'type',
    args: lock.args,
  });
  const chain = createRpcClient(d.chain.rpc_url);
  const hash = (await chain.call('faucet', [
    lock,
    toHexQuantity(req.ckb * CKB),
    toHexQuantity(req.udt),
    toHexQuantity(req.xudt),
  ])) as string;
  await waitCommitted(
    chain,
    hash,
    (waitedMs) => req.progress?.(`tx ${hash} ${Math.round(waitedMs / 1000)} s, not committed yet…`),
    req.progressEveryMs ?? PROGRESS_EVERY_MS,
  );
  const balance = await chain.call('get_cells_capacity', [{ script: lock, script_type: 'lock' }]);
  const tokens = [
    req.udt > 0n ? `${req.udt} test UDT` : '',
    req.xudt > 0n ? `${req.xudt} test xUDT` : '',
  ].filter(Boolean);
  return [
    `sent ${req.ckb} CKB${tokens.length ? ` + ${tokens.join(' + ')}` : ''} to ${address}${node ? ` (${node.name})` : ''}`,
    `tx ${hash}`,
    `balance ${formatCkb(BigInt((balance as { capacity: string } | null)?.capacity ?? 0))} CKB`,
  ];
}

/** Lock args of a secp256k1-blake160 wallet, or an address. */
function lockOf(target: string): LockJson {
  if (/^0x[0-9a-fA-F]{40}$/.test(target))
    return { code_hash: SIGHASH_ALL_TYPE_HASH, hash_type: 'type', args: target };
  const s = addressToScript(target);
  return { code_hash: s.codeHash, hash_type: s.hashType, args: s.args };
}

async function waitCommitted(
  chain: ReturnType<typeof createRpcClient>,
  hash: string,
  progress: (waitedMs: number) => void,
  everyMs: number,
): Promise<void> {
  const started = Date.now();
  const deadline = started + COMMIT_TIMEOUT_MS;
  let next = started + everyMs;
  for (;;) {
    const r = (await chain.call('get_transaction', [hash])) as { tx_status: { status: string } };
    if (r.tx_status.status === 'committed') return;
    if (r.tx_status.status === 'rejected') throw new Error(`faucet transaction ${hash} was rejected`);
    if (Date.now() > deadline) throw new Error(`faucet transaction ${hash} not committed after 60 s`);
    if (Date.now() >= next) {
      progress(Date.now() - started);
      next += everyMs;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Shannons as CKB, without trailing zeros: 100000050000000 → 1000000.5. */
export function formatCkb(shannons: bigint): string {
  const whole = shannons / CKB;
  const frac = (shannons % CKB).toString().padStart(8, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole.toString();
}
