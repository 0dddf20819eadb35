/**
 * Declarative molecule schemas: one object per molecule type gives its encoder, its decoder and
 * (through `Infer`) its TypeScript type, so the two directions of a message cannot drift.
 *
 * Why not @ckb-ccc/core's `mol` codecs: they build bytes through number arrays (AddTlc encode +
 * decode about 1.5k/s against ~100k/s here, `npm run bench:wire`), their table reader checks
 * neither offset order nor bounds, and they throw plain `Error`.
 *
 * Reading is as strict as the reference's generated Rust readers (`verify`, non-compatible mode
 * unless a table says `compatible`): exact field counts, ordered and in-range offsets, fixvec
 * counts that match, structs of their exact size, known union ids. Every failure is a
 * `MoleculeError` whose text is molecule's own (`AddTlcReader total size doesn't match, expect 8,
 * actual 4`), so the invoice reports what the reference node reports. Hostile bytes never raise
 * anything else. Writing goes in one pass into a buffer of the exact size.
 */
import { MoleculeError, readU32le as readU32 } from './molecule.ts';

type Bytes = Uint8Array;

export abstract class Schema<T> {
  /** Byte size when every value has the same size (structs, arrays, numbers). */
  abstract readonly size: number | undefined;
  constructor(readonly name: string) {}
  abstract sizeOf(v: T): number;
  /** Writes `v` at `at` and returns where it ends. */
  abstract write(v: T, out: Bytes, at: number): number;
  /** Reads the value held by `buf[start, end)`, verified. */
  abstract read(buf: Bytes, start: number, end: number): T;

  encode(v: T): Bytes {
    const out = new Uint8Array(this.sizeOf(v));
    this.write(v, out, 0);
    return out;
  }

  decode(buf: Bytes): T {
    return this.read(buf, 0, buf.length);
  }

  fail(text: string): never {
    throw new MoleculeError(`${this.name}Reader ${text}`);
  }

  sizeNot(expected: number, actual: number): never {
    return this.fail(`total size doesn't match, expect ${expected}, actual ${actual}`);
  }

  headerBroken(expected: number, actual: number): never {
    return this.fail(`total size is not enough for header, expect ${expected}, actual ${actual}`);
  }
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

function writeU32(out: Bytes, at: number, n: number): void {
  out[at] = n;
  out[at + 1] = n >>> 8;
  out[at + 2] = n >>> 16;
  out[at + 3] = n >>> 24;
}

// ---- fixed-size leaves ----------------------------------------------------------------------

/** `array ByteN [byte; N]`: a byte string of exactly `size` bytes (decoded as a copy). */
class FixedBytes extends Schema<Bytes> {
  constructor(
    readonly size: number,
    name: string,
  ) {
    super(name);
  }
  sizeOf(): number {
    return this.size;
  }
  write(v: Bytes, out: Bytes, at: number): number {
    if (v.length !== this.size)
      throw new MoleculeError(`${this.name}: expected ${this.size} bytes, got ${v.length}`);
    out.set(v, at);
    return at + this.size;
  }
  read(buf: Bytes, start: number, end: number): Bytes {
    if (end - start !== this.size) this.sizeNot(this.size, end - start);
    return buf.slice(start, end);
  }
}

export const byteArray = (size: number, name = `Byte${size}`): Schema<Bytes> => new FixedBytes(size, name);

/** Little-endian unsigned integer of up to 6 bytes, as a number. */
class SmallUint extends Schema<number> {
  private readonly max: number;
  constructor(
    readonly size: number,
    name: string,
    private readonly wrap: boolean,
  ) {
    super(name);
    this.max = 2 ** (8 * size);
  }
  sizeOf(): number {
    return this.size;
  }
  write(v: number, out: Bytes, at: number): number {
    let x = v;
    if (this.wrap) x = ((v % this.max) + this.max) % this.max;
    else if (!Number.isInteger(v) || v < 0 || v >= this.max)
      throw new MoleculeError(`${this.name}: ${v} out of range`);
    for (let i = 0; i < this.size; i++) {
      out[at + i] = x % 256;
      x = Math.floor(x / 256);
    }
    return at + this.size;
  }
  read(buf: Bytes, start: number, end: number): number {
    if (end - start !== this.size) this.sizeNot(this.size, end - start);
    let v = 0;
    for (let i = this.size - 1; i >= 0; i--) v = v * 256 + buf[start + i]!;
    return v;
  }
}

/** Little-endian unsigned integer as a bigint, written and read 32 bits at a time. */
class BigUint extends Schema<bigint> {
  private readonly limit: bigint;
  constructor(
    readonly size: number,
    name: string,
  ) {
    super(name);
    this.limit = 1n << BigInt(8 * size);
  }
  sizeOf(): number {
    return this.size;
  }
  write(v: bigint, out: Bytes, at: number): number {
    if (v < 0n || v >= this.limit) throw new MoleculeError(`${this.name}: ${v} out of range`);
    let x = v;
    for (let i = 0; i < this.size; i += 4) {
      writeU32(out, at + i, Number(x & 0xffffffffn));
      x >>= 32n;
    }
    return at + this.size;
  }
  read(buf: Bytes, start: number, end: number): bigint {
    if (end - start !== this.size) this.sizeNot(this.size, end - start);
    let v = 0n;
    for (let i = this.size - 4; i >= 0; i -= 4) v = (v << 32n) | BigInt(readU32(buf, start + i));
    return v;
  }
}

/** A byte; writing keeps the low 8 bits, as `Uint8Array.of` does. */
export const u8 = new SmallUint(1, 'Byte', true);
export const u16 = new SmallUint(2, 'Uint16', false);
export const u32 = new SmallUint(4, 'Uint32', false);
export const u64 = new BigUint(8, 'Uint64');
export const u128 = new BigUint(16, 'Uint128');
/** A one-byte type of its own name (its errors say so). */
export const byteNamed = (name: string): Schema<number> => new SmallUint(1, name, true);
export const uint = (size: 8 | 16, name: string): Schema<bigint> => new BigUint(size, name);

// ---- vectors ------------------------------------------------------------------------------------

/** `vector Bytes <byte>`: count ‖ bytes, decoded as a copy. */
class ByteVec extends Schema<Bytes> {
  readonly size = undefined;
  sizeOf(v: Bytes): number {
    return 4 + v.length;
  }
  write(v: Bytes, out: Bytes, at: number): number {
    writeU32(out, at, v.length);
    out.set(v, at + 4);
    return at + 4 + v.length;
  }
  read(buf: Bytes, start: number, end: number): Bytes {
    if (end - start < 4) this.headerBroken(4, end - start);
    const total = 4 + readU32(buf, start);
    if (total !== end - start) this.sizeNot(total, end - start);
    return buf.slice(start + 4, end);
  }
}

export const bytes = (name = 'Bytes'): Schema<Bytes> => new ByteVec(name);

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

/** A string carried as `Bytes` of its UTF-8; invalid UTF-8 is a MoleculeError. */
export function utf8(name = 'Bytes'): Schema<string> {
  const raw = new ByteVec(name);
  return map(
    raw,
    (b) => {
      try {
        return utf8Decoder.decode(b);
      } catch {
        throw new MoleculeError(`${name}: not valid UTF-8`);
      }
    },
    (s: string) => utf8Encoder.encode(s),
  );
}

/** `vector X <Item>` of a fixed-size item: count ‖ items. */
class FixVec<T> extends Schema<T[]> {
  readonly size = undefined;
  private readonly itemSize: number;
  constructor(
    name: string,
    private readonly item: Schema<T>,
  ) {
    super(name);
    if (item.size === undefined) throw new TypeError(`${name}: fixvec item must have a fixed size`);
    this.itemSize = item.size;
  }
  sizeOf(v: T[]): number {
    return 4 + v.length * this.itemSize;
  }
  write(v: T[], out: Bytes, at: number): number {
    writeU32(out, at, v.length);
    let p = at + 4;
    for (const x of v) p = this.item.write(x, out, p);
    return p;
  }
  read(buf: Bytes, start: number, end: number): T[] {
    const len = end - start;
    if (len < 4) this.headerBroken(4, len);
    const total = 4 + this.itemSize * readU32(buf, start);
    if (total !== len) this.sizeNot(total, len);
    const out: T[] = [];
    for (let p = start + 4; p < end; p += this.itemSize) out.push(this.item.read(buf, p, p + this.itemSize));
    return out;
  }
}

export const fixvec = <T>(name: string, item: Schema<T>): Schema<T[]> => new FixVec(name, item);

/**
 * Reads the header shared by tables and dynvecs (molecule's checks, in its order): the item
 * offsets, absolute, `end` last. `fields` is a table's field count, undefined for a dynvec.
 */
function readOffsets(
  s: Schema<unknown>,
  buf: Bytes,
  start: number,
  end: number,
  fields?: number,
  compatible = false,
): number[] {
  const len = end - start;
  if (len < 4) s.headerBroken(4, len);
  const total = readU32(buf, start);
  if (total !== len) s.sizeNot(total, len);
  if (len === 4 && (fields === undefined || fields === 0)) return [end];
  if (len < 8) {
    if (fields === undefined) s.sizeNot(8, len);
    s.headerBroken(8, len);
  }
  const first = readU32(buf, start + 4);
  if (first % 4 !== 0 || first < 8) s.fail('some offsets is not match');
  if (len < first) s.headerBroken(first, len);
  const count = first / 4 - 1;
  if (fields !== undefined && (count < fields || (count > fields && !compatible)))
    s.fail(`field count doesn't match, expect ${fields}, actual ${count}`);
  const offsets = new Array<number>(count + 1);
  let prev = first;
  for (let i = 0; i < count; i++) {
    const o = i === 0 ? first : readU32(buf, start + 4 + 4 * i);
    if (o < prev) s.fail('some offsets is not match');
    offsets[i] = start + o;
    prev = o;
  }
  if (prev > len) s.fail('some offsets is not match');
  offsets[count] = end;
  return offsets;
}

/** `vector X <Item>` of a dynamic-size item: total ‖ offsets ‖ items. */
class DynVec<T> extends Schema<T[]> {
  readonly size = undefined;
  constructor(
    name: string,
    private readonly item: Schema<T>,
  ) {
    super(name);
  }
  sizeOf(v: T[]): number {
    let n = 4 + 4 * v.length;
    for (const x of v) n += this.item.sizeOf(x);
    return n;
  }
  write(v: T[], out: Bytes, at: number): number {
    let p = at + 4 + 4 * v.length;
    for (let i = 0; i < v.length; i++) {
      writeU32(out, at + 4 + 4 * i, p - at);
      p = this.item.write(v[i]!, out, p);
    }
    writeU32(out, at, p - at);
    return p;
  }
  read(buf: Bytes, start: number, end: number): T[] {
    const offsets = readOffsets(this, buf, start, end);
    const out: T[] = [];
    for (let i = 0; i + 1 < offsets.length; i++) out.push(this.item.read(buf, offsets[i]!, offsets[i + 1]!));
    return out;
  }
}

export const dynvec = <T>(name: string, item: Schema<T>): Schema<T[]> => new DynVec(name, item);

// ---- records --------------------------------------------------------------------------------------

type Fields = Record<string, Schema<unknown>>;
export type RecordOf<F extends Fields> = { [K in keyof F]: Infer<F[K]> };

/**
 * The per-record code, generated once per schema from its field list: each record type gets its
 * own functions (so V8's inline caches see one shape and one field schema per call site) and builds
 * its result as one object literal. Field names come from our own declarations, never from input.
 */
interface RecordCode {
  /** Struct: reads fields at fixed offsets from `p`. Table: reads field i from `o[i]` to `o[i+1]`. */
  read: (b: Bytes, p: number | number[]) => object;
  /** Struct: writes fields one after the other. Table: also fills the offset header at `p`. */
  write: (v: unknown, out: Bytes, p: number) => number;
  sizeOf: (v: unknown) => number;
}

function compileRecord(fields: Fields, table: boolean): RecordCode {
  const keys = Object.keys(fields);
  const schemas = Object.values(fields);
  const key = keys.map((k) => `v[${JSON.stringify(k)}]`);
  const bind = schemas.map((_, i) => `const s${i} = s[${i}];`).join(' ');
  let reads: string[];
  let writes: string[];
  if (table) {
    const header = 4 + 4 * keys.length;
    reads = keys.map((k, i) => `${JSON.stringify(k)}: s${i}.read(b, p[${i}], p[${i + 1}])`);
    writes = [`const at = p; p += ${header};`];
    for (let i = 0; i < keys.length; i++)
      writes.push(`w(out, at + ${4 + 4 * i}, p - at); p = s${i}.write(${key[i]}, out, p);`);
    writes.push('w(out, at, p - at);');
  } else {
    let off = 0;
    reads = keys.map((k, i) => {
      const r = `${JSON.stringify(k)}: s${i}.read(b, p + ${off}, p + ${off + schemas[i]!.size!})`;
      off += schemas[i]!.size!;
      return r;
    });
    writes = keys.map((_, i) => `p = s${i}.write(${key[i]}, out, p);`);
  }
  const sizes = keys.map((_, i) => `s${i}.sizeOf(${key[i]})`);
  const make = new Function(
    's',
    'w',
    `${bind}
    return {
      read: function (b, p) { return { ${reads.join(', ')} }; },
      write: function (v, out, p) { ${writes.join(' ')} return p; },
      sizeOf: function (v) { return ${4 + 4 * keys.length}${sizes.map((x) => ` + ${x}`).join('')}; },
    };`,
  );
  return make(schemas, writeU32) as RecordCode;
}

/** `struct`: fixed-size fields one after the other. */
class Struct<F extends Fields> extends Schema<RecordOf<F>> {
  readonly size: number;
  private readonly code: RecordCode;
  constructor(name: string, fields: F) {
    super(name);
    let size = 0;
    for (const s of Object.values(fields)) {
      if (s.size === undefined) throw new TypeError(`${name}: struct fields must have a fixed size`);
      size += s.size;
    }
    this.size = size;
    this.code = compileRecord(fields, false);
  }
  sizeOf(): number {
    return this.size;
  }
  write(v: RecordOf<F>, out: Bytes, at: number): number {
    return this.code.write(v, out, at);
  }
  read(buf: Bytes, start: number, end: number): RecordOf<F> {
    if (end - start !== this.size) this.sizeNot(this.size, end - start);
    return this.code.read(buf, start) as RecordOf<F>;
  }
}

export const struct = <F extends Fields>(name: string, fields: F): Schema<RecordOf<F>> =>
  new Struct(name, fields);

/**
 * `table`: total ‖ offsets ‖ fields. `compatible` is molecule's compatible mode, for tables a newer
 * peer may extend: more fields than the schema's are allowed and ignored.
 */
class Table<F extends Fields> extends Schema<RecordOf<F>> {
  readonly size = undefined;
  private readonly fieldCount: number;
  private readonly code: RecordCode;
  constructor(
    name: string,
    fields: F,
    private readonly compatible: boolean,
  ) {
    super(name);
    this.fieldCount = Object.keys(fields).length;
    this.code = compileRecord(fields, true);
  }
  sizeOf(v: RecordOf<F>): number {
    return this.code.sizeOf(v);
  }
  write(v: RecordOf<F>, out: Bytes, at: number): number {
    return this.code.write(v, out, at);
  }
  read(buf: Bytes, start: number, end: number): RecordOf<F> {
    return this.code.read(
      buf,
      readOffsets(this, buf, start, end, this.fieldCount, this.compatible),
    ) as RecordOf<F>;
  }
}

export const table = <F extends Fields>(name: string, fields: F, opts?: { compatible?: boolean }) =>
  new Table(name, fields, opts?.compatible ?? false) as Schema<RecordOf<F>>;

/** `option X`: nothing for null, else the inner value. */
class Option<T> extends Schema<T | null> {
  readonly size = undefined;
  constructor(private readonly inner: Schema<T>) {
    super(inner.name);
  }
  sizeOf(v: T | null): number {
    return v === null || v === undefined ? 0 : this.inner.sizeOf(v);
  }
  write(v: T | null, out: Bytes, at: number): number {
    return v === null || v === undefined ? at : this.inner.write(v, out, at);
  }
  read(buf: Bytes, start: number, end: number): T | null {
    return start === end ? null : this.inner.read(buf, start, end);
  }
}

export const option = <T>(inner: Schema<T>): Schema<T | null> => new Option(inner);

// ---- unions -----------------------------------------------------------------------------------------

type Variants = Record<string, Schema<unknown>>;
export type UnionOf<V extends Variants> = {
  [K in keyof V & string]: { type: K; value: Infer<V[K]> };
}[keyof V & string];

/** `union`: item id (u32) ‖ item; ids are the variants' positions unless `ids` gives them. */
class Union<V extends Variants> extends Schema<UnionOf<V>> {
  readonly size = undefined;
  private readonly byId = new Map<number, [string, Schema<unknown>]>();
  private readonly byType = new Map<string, [number, Schema<unknown>]>();
  constructor(name: string, variants: V, ids?: Record<keyof V, number>) {
    super(name);
    Object.entries(variants).forEach(([type, s], i) => {
      const id = ids ? ids[type]! : i;
      this.byId.set(id, [type, s]);
      this.byType.set(type, [id, s]);
    });
  }
  private variant(type: string): [number, Schema<unknown>] {
    const v = this.byType.get(type);
    if (!v) throw new MoleculeError(`${this.name}: unknown item ${type}`);
    return v;
  }
  sizeOf(v: UnionOf<V>): number {
    return 4 + this.variant(v.type)[1].sizeOf(v.value);
  }
  write(v: UnionOf<V>, out: Bytes, at: number): number {
    const [id, s] = this.variant(v.type);
    writeU32(out, at, id);
    return s.write(v.value, out, at + 4);
  }
  read(buf: Bytes, start: number, end: number): UnionOf<V> {
    if (end - start < 4) this.headerBroken(4, end - start);
    const id = readU32(buf, start);
    const v = this.byId.get(id);
    if (!v) this.fail(`item id (=${id}) is an unknown id, only has ${this.byId.size} kind of items`);
    return { type: v[0], value: v[1].read(buf, start + 4, end) } as UnionOf<V>;
  }
}

export const union = <V extends Variants>(name: string, variants: V, ids?: Record<keyof V, number>) =>
  new Union(name, variants, ids) as Schema<UnionOf<V>>;

/** A union whose items are records, read and written flat: `{type, ...fields}`. */
export type FlatUnionOf<V extends Variants> = { [K in keyof V & string]: { type: K } & Infer<V[K]> }[keyof V &
  string];

export function flatUnion<V extends Variants>(name: string, variants: V): Schema<FlatUnionOf<V>> {
  return map(
    union(name, variants),
    (u) => ({ type: u.type, ...(u.value as object) }) as FlatUnionOf<V>,
    (f: FlatUnionOf<V>) => ({ type: f.type, value: f }) as UnionOf<V>,
  );
}

// ---- adapters -----------------------------------------------------------------------------------------

/** The same bytes seen as another type: `to` after reading, `from` before writing. */
class Mapped<A, B> extends Schema<B> {
  readonly size: number | undefined;
  constructor(
    private readonly inner: Schema<A>,
    private readonly to: (a: A) => B,
    private readonly from: (b: B) => A,
  ) {
    super(inner.name);
    this.size = inner.size;
  }
  sizeOf(v: B): number {
    return this.inner.sizeOf(this.from(v));
  }
  write(v: B, out: Bytes, at: number): number {
    return this.inner.write(this.from(v), out, at);
  }
  read(buf: Bytes, start: number, end: number): B {
    return this.to(this.inner.read(buf, start, end));
  }
}

export const map = <A, B>(inner: Schema<A>, to: (a: A) => B, from: (b: B) => A): Schema<B> =>
  new Mapped(inner, to, from);

/**
 * A type written by someone else's codec (ccc's Script, Transaction): `encode` gives its bytes,
 * `decode` reads them (after the schema `check`, if any, verified the layout). Anything `decode`
 * throws becomes a MoleculeError.
 */
class Foreign<T> extends Schema<T> {
  readonly size = undefined;
  private last: { v: T; b: Bytes } | undefined;
  constructor(
    name: string,
    private readonly enc: (v: T) => Bytes,
    private readonly dec: (b: Bytes) => T,
    private readonly check?: Schema<unknown>,
  ) {
    super(name);
  }
  private bytesOf(v: T): Bytes {
    if (this.last?.v !== v) this.last = { v, b: this.enc(v) };
    return this.last.b;
  }
  sizeOf(v: T): number {
    return this.bytesOf(v).length;
  }
  write(v: T, out: Bytes, at: number): number {
    const b = this.bytesOf(v);
    this.last = undefined;
    out.set(b, at);
    return at + b.length;
  }
  read(buf: Bytes, start: number, end: number): T {
    this.check?.read(buf, start, end);
    try {
      return this.dec(buf.slice(start, end));
    } catch (e) {
      if (e instanceof MoleculeError) throw e;
      throw new MoleculeError(`${this.name}: ${(e as Error).message}`);
    }
  }
}

export const foreign = <T>(
  name: string,
  encode: (v: T) => Bytes,
  decode: (b: Bytes) => T,
  check?: Schema<unknown>,
): Schema<T> => new Foreign(name, encode, decode, check);

// ---- CKB types used across the layers ------------------------------------------------------------

/** CKB `OutPoint` (`blockchain.mol`): transaction hash and output index. */
export const OutPoint = struct('OutPoint', { txHash: byteArray(32), index: u32 });

/** CKB `Script` (`blockchain.mol`): code hash, hash type byte (`HASH_TYPE_BYTE`), args. */
export const Script = table('Script', { codeHash: byteArray(32), hashType: u8, args: bytes() });
