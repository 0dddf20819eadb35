/**
 * CKB transactions in molecule, written directly into one buffer: `RawTransaction`,
 * `Transaction` and `CellOutput`, byte for byte what @ckb-ccc/core's `rawToBytes`, `toBytes` and
 * `hash` give (`test/codec/ckb-tx.test.ts` compares them on random transactions).
 *
 * Why not ccc's own: its codecs build every integer through a hex string and concatenate
 * each field's bytes into new arrays, level by level. A channel round encodes its commitment
 * transactions several times (the signed message, the stored transaction, its hash), and ccc's
 * encoding was ~17 % of the channel machine's CPU.
 *
 * Layouts (molecule): a struct is its fields back to back; a fixvec is a u32 item count and the
 * items; a table and a dynvec are a u32 total size, one u32 offset per field or item, then the
 * fields or items (an empty dynvec is its size alone, 4).
 */
import type { ccc } from '@ckb-ccc/core';
import { HASH_TYPE_BYTE } from './molecule.ts';

const DEP_TYPE_BYTE: Readonly<Record<string, number>> = { code: 0, depGroup: 1 };

/** A growable little-endian writer. */
class Writer {
  buf = Buffer.allocUnsafe(1024);
  at = 0;

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.at++] = v;
  }

  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v >>> 0, this.at);
    this.at += 4;
  }

  u64(v: bigint): void {
    this.room(8);
    this.buf.writeBigUInt64LE(v, this.at);
    this.at += 8;
  }

  /** A u32 written later (a size or an offset): where it goes. */
  slot(): number {
    this.room(4);
    this.at += 4;
    return this.at - 4;
  }

  fill(slot: number, v: number): void {
    this.buf.writeUInt32LE(v >>> 0, slot);
  }

  hex(h: string): void {
    const n = (h.length - 2) >>> 1;
    this.room(n);
    if (n > 0 && this.buf.write(h.slice(2), this.at, n, 'hex') !== n)
      throw new RangeError(`not hex bytes: ${h.slice(0, 20)}`);
    this.at += n;
  }

  /** Molecule `Bytes`: a fixvec of bytes. */
  bytes(h: string): void {
    this.u32((h.length - 2) >>> 1);
    this.hex(h);
  }

  /** A table or dynvec of `n` parts, each written by `part(i)`. */
  table(n: number, part: (i: number) => void): void {
    const start = this.at;
    const size = this.slot();
    const offsets = Array.from({ length: n }, () => this.slot());
    for (let i = 0; i < n; i++) {
      this.fill(offsets[i]!, this.at - start);
      part(i);
    }
    this.fill(size, this.at - start);
  }

  done(): Uint8Array {
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.at).slice();
  }
}

function script(w: Writer, s: ccc.Script): void {
  const hashType = HASH_TYPE_BYTE[s.hashType];
  if (hashType === undefined) throw new RangeError(`unknown hash type ${s.hashType}`);
  w.table(3, (i) => {
    if (i === 0) w.hex(s.codeHash);
    else if (i === 1) w.u8(hashType);
    else w.bytes(s.args);
  });
}

function cellOutput(w: Writer, o: ccc.CellOutput): void {
  w.table(3, (i) => {
    if (i === 0) w.u64(o.capacity);
    else if (i === 1) script(w, o.lock);
    else if (o.type) script(w, o.type);
  });
}

function outPoint(w: Writer, p: ccc.OutPoint): void {
  w.hex(p.txHash);
  w.u32(Number(p.index));
}

function rawTx(w: Writer, tx: ccc.Transaction, withCellDeps: boolean): void {
  const deps = withCellDeps ? tx.cellDeps : [];
  w.table(6, (i) => {
    switch (i) {
      case 0:
        return w.u32(Number(tx.version));
      case 1:
        w.u32(deps.length);
        for (const d of deps) {
          outPoint(w, d.outPoint);
          const t = DEP_TYPE_BYTE[d.depType];
          if (t === undefined) throw new RangeError(`unknown dep type ${d.depType}`);
          w.u8(t);
        }
        return;
      case 2:
        w.u32(tx.headerDeps.length);
        for (const hd of tx.headerDeps) w.hex(hd);
        return;
      case 3:
        w.u32(tx.inputs.length);
        for (const inp of tx.inputs) {
          w.u64(inp.since);
          outPoint(w, inp.previousOutput);
        }
        return;
      case 4:
        return w.table(tx.outputs.length, (j) => cellOutput(w, tx.outputs[j]!));
      default:
        return w.table(tx.outputsData.length, (j) => w.bytes(tx.outputsData[j]!));
    }
  });
}

/** Molecule `RawTransaction` (ccc's `rawToBytes`); `withCellDeps: false` encodes them as none. */
export function rawTxBytes(tx: ccc.Transaction, opts: { withCellDeps?: boolean } = {}): Uint8Array {
  const w = new Writer();
  rawTx(w, tx, opts.withCellDeps ?? true);
  return w.done();
}

/** Molecule `Transaction`: the raw transaction and the witnesses (ccc's `toBytes`). */
export function txBytes(tx: ccc.Transaction): Uint8Array {
  const w = new Writer();
  w.table(2, (i) => {
    if (i === 0) rawTx(w, tx, true);
    else w.table(tx.witnesses.length, (j) => w.bytes(tx.witnesses[j]!));
  });
  return w.done();
}

/** Molecule `CellOutput` (ccc's `CellOutput.toBytes`). */
export function cellOutputBytes(o: ccc.CellOutput): Uint8Array {
  const w = new Writer();
  cellOutput(w, o);
  return w.done();
}
