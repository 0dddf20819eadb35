/**
 * Building a genesis takes seconds (ccc hashes the 1 MB cellbase slowly), so built genesis blocks
 * are cached: in memory per process, and on disk in the OS temp directory keyed by the spec text
 * and the installed fiber-js version. A cached file is fully re-checked on load — each tx hash and
 * witness hash recomputed from the stored bytes, the transactions root and the header hash — so a
 * stale or damaged file is rebuilt, never trusted.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { bytesToHex } from '../codec/index.ts';
import { ckbHash } from '../crypto/index.ts';
import { type Block, type Header, headerHash, merkleRoot } from './block.ts';
import { buildGenesis } from './genesis.ts';
import type { ChainSpec } from './spec.ts';
import { primeTxCache } from './txcache.ts';

const memory = new Map<string, Block>();

export function cachedGenesis(specToml: string, spec: ChainSpec): Block {
  const hit = memory.get(specToml);
  if (hit) return hit;
  const file = cacheFile(specToml);
  let block = file ? load(file) : undefined;
  if (!block) {
    block = buildGenesis(spec).block;
    if (file) save(file, block);
  }
  memory.set(specToml, block);
  return block;
}

function cacheFile(specToml: string): string | undefined {
  let version = 'unknown';
  try {
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@nervosnetwork/fiber-js');
    version = JSON.parse(
      fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8'),
    ).version;
  } catch {
    return undefined;
  }
  const key = bytesToHex(ckbHash(new TextEncoder().encode(`${version}\n${specToml}`)), false).slice(0, 32);
  return path.join(os.tmpdir(), 'strand-genesis', `${key}.json`);
}

/** The RawTransaction slice of a molecule Transaction (table field 0). */
function rawSlice(full: Uint8Array): Uint8Array {
  const dv = new DataView(full.buffer, full.byteOffset, full.byteLength);
  if (full.length < 12 || dv.getUint32(0, true) !== full.length) throw new Error('bad transaction bytes');
  return full.subarray(dv.getUint32(4, true), dv.getUint32(8, true));
}

function load(file: string): Block | undefined {
  try {
    const j = JSON.parse(fs.readFileSync(file, 'utf8')) as {
      hash: string;
      header: Record<string, string>;
      txs: string[];
    };
    const header: Header = {
      ...(j.header as unknown as Header),
      timestamp: BigInt(j.header.timestamp as string),
      number: BigInt(j.header.number as string),
      epoch: BigInt(j.header.epoch as string),
      nonce: BigInt(j.header.nonce as string),
      version: Number(j.header.version),
      compactTarget: Number(j.header.compactTarget),
    };
    const fulls = j.txs.map((h) => Buffer.from(h, 'hex'));
    const hashes = fulls.map((f) => ckbHash(rawSlice(f)));
    const witnessHashes = fulls.map((f) => ckbHash(f));
    const root = bytesToHex(ckbHash(merkleRoot(hashes), merkleRoot(witnessHashes)));
    if (root !== header.transactionsRoot || headerHash(header) !== j.hash) return undefined;
    const transactions = fulls.map((f, i) => {
      const tx = ccc.Transaction.fromBytes(f);
      primeTxCache(tx, bytesToHex(hashes[i] as Uint8Array) as ccc.Hex, new Uint8Array(f));
      return tx;
    });
    return { header, hash: j.hash as ccc.Hex, transactions };
  } catch {
    return undefined;
  }
}

function save(file: string, block: Block): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const h = block.header;
    const header = {
      ...h,
      timestamp: h.timestamp.toString(),
      number: h.number.toString(),
      epoch: h.epoch.toString(),
      nonce: h.nonce.toString(),
    };
    const txs = block.transactions.map((tx) => Buffer.from(tx.toBytes()).toString('hex'));
    // Write then rename: a concurrent reader sees the old file or the whole new one.
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ hash: block.hash, header, txs }));
    fs.renameSync(tmp, file);
  } catch {
    // A cache that cannot be written only costs time.
  }
}

/** Drops the in-memory copies (tests use it to exercise the disk cache). */
export function forgetGenesisMemory(): void {
  memory.clear();
}

/** Where the disk cache of this spec lives (undefined when fiber-js is not installed). */
export function genesisCacheFile(specToml: string): string | undefined {
  return cacheFile(specToml);
}
