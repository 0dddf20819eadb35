/**
 * Simple UDT and xUDT verifiers driven directly: owner mode, conservation, args and data rules,
 * and xUDT's flags (owner-mode bits; extension scripts refused).
 */
import { ccc } from '@ckb-ccc/core';
import { describe, expect, it } from 'vitest';
import { makeTxContext, type ResolvedCell } from '../../src/devchain/scripts/context.ts';
import { simpleUdt, XUDT_INVALID_FLAG, xUdt, xudtFlags } from '../../src/devchain/scripts/udt.ts';

const owner = ccc.Script.from({ codeHash: `0x${'aa'.repeat(32)}`, hashType: 'type', args: '0x01' });
const user = ccc.Script.from({ codeHash: `0x${'aa'.repeat(32)}`, hashType: 'type', args: '0x02' });
const amount = (v: bigint) => ccc.numLeToBytes(v, 16);

function run(
  verifier: typeof simpleUdt,
  typeArgs: ccc.Hex,
  inputs: [ccc.Script, bigint][],
  outputs: bigint[],
  outData?: Uint8Array,
) {
  const type = ccc.Script.from({ codeHash: `0x${'bb'.repeat(32)}`, hashType: 'data2', args: typeArgs });
  const resolved: ResolvedCell[] = inputs.map(([lock, v], i) => ({
    outPoint: ccc.OutPoint.from({ txHash: `0x${'11'.repeat(32)}`, index: i }),
    output: ccc.CellOutput.from({ capacity: 200n, lock, type }),
    data: amount(v),
  }));
  const tx = ccc.Transaction.from({
    inputs: resolved.map((r) => ({ previousOutput: r.outPoint })),
    outputs: outputs.map(() => ({ capacity: 200n, lock: user, type })),
    outputsData: outputs.map((v) => ccc.hexFrom(outData ?? amount(v))),
  });
  return verifier.verify(makeTxContext(tx, resolved), {
    script: type,
    kind: 'type',
    inputIndices: resolved.map((_, i) => i),
    outputIndices: outputs.map((_, i) => i),
  });
}

describe.each([
  ['simple UDT', simpleUdt, (h: ccc.Hex) => h],
  ['xUDT', xUdt, (h: ccc.Hex) => ccc.hexFrom(`${h}00000000`)],
])('%s', (_name, verifier, argsOf) => {
  const args = argsOf(owner.hash());
  it('conserves amounts without the owner', () => {
    expect(
      run(
        verifier,
        args,
        [
          [user, 100n],
          [user, 50n],
        ],
        [120n, 30n],
      ),
    ).toBe(0);
    expect(run(verifier, args, [[user, 100n]], [60n, 41n])).toBe(-52);
    expect(run(verifier, args, [[user, 100n]], [])).toBe(0); // burning is allowed
  });
  it('lets an input with the owner lock mint', () => {
    expect(run(verifier, args, [[owner, 0n]], [1_000_000n])).toBe(0);
  });
  it('rejects short data and overflowing sums', () => {
    expect(run(verifier, args, [[user, 100n]], [1n], new Uint8Array(15))).toBe(-2);
    const max = (1n << 128n) - 1n;
    expect(
      run(
        verifier,
        args,
        [
          [user, max],
          [user, max],
        ],
        [1n],
      ),
    ).toBe(-51);
  });
});

describe('UDT args', () => {
  it('simple UDT needs exactly 32-byte args; xUDT 32 or more', () => {
    const h = owner.hash();
    expect(run(simpleUdt, ccc.hexFrom(`${h}00`), [[user, 1n]], [1n])).toBe(-1);
    expect(run(xUdt, h, [[user, 1n]], [1n])).toBe(0);
    expect(run(xUdt, ccc.hexFrom(h.slice(0, 64)), [[user, 1n]], [1n])).toBe(-1);
    // Flags 0 with bytes after them: no extension, the rest is not read (as xudt_rce.c).
    expect(run(xUdt, ccc.hexFrom(`${h}00000000abcd`), [[user, 1n]], [1n])).toBe(0);
  });
});

describe('xUDT flags', () => {
  const h = owner.hash();
  const withFlags = (flags: number, extra = '') =>
    ccc.hexFrom(`${h}${ccc.hexFrom(ccc.numLeToBytes(flags, 4)).slice(2)}${extra}`);

  it('refuses extension scripts, in args (1) or in the witness (2), even for the owner (44)', () => {
    expect(xudtFlags(withFlags(1))).toBe(1);
    expect(run(xUdt, withFlags(1, '04000000'), [[user, 1n]], [1n])).toBe(XUDT_INVALID_FLAG);
    expect(run(xUdt, withFlags(2, '11'.repeat(20)), [[owner, 1n]], [1n])).toBe(XUDT_INVALID_FLAG);
    expect(run(xUdt, withFlags(0x80000003), [[owner, 1n]], [1n])).toBe(XUDT_INVALID_FLAG);
  });

  it('0x20000000 turns off owner mode by input lock', () => {
    expect(run(xUdt, withFlags(0x20000000), [[owner, 0n]], [5n])).toBe(-52);
    expect(run(xUdt, withFlags(0x20000000), [[user, 5n]], [5n])).toBe(0);
  });

  it('0x80000000 / 0x40000000: owner mode by an input or output type script with the owner hash', () => {
    // The owner here is a type script: the hash in the args is that of `ownerType`.
    const ownerType = ccc.Script.from({ codeHash: `0x${'cc'.repeat(32)}`, hashType: 'type', args: '0x07' });
    const typeArgs = (flags: number) =>
      ccc.hexFrom(`${ownerType.hash()}${ccc.hexFrom(ccc.numLeToBytes(flags, 4)).slice(2)}`);
    const mint = (flags: number, where: 'input' | 'output' | 'none') => {
      const udt = ccc.Script.from({
        codeHash: `0x${'bb'.repeat(32)}`,
        hashType: 'data2',
        args: typeArgs(flags),
      });
      const other: ResolvedCell = {
        outPoint: ccc.OutPoint.from({ txHash: `0x${'22'.repeat(32)}`, index: 0 }),
        output: ccc.CellOutput.from({
          capacity: 200n,
          lock: user,
          type: where === 'input' ? ownerType : undefined,
        }),
        data: new Uint8Array(0),
      };
      const tx = ccc.Transaction.from({
        inputs: [{ previousOutput: other.outPoint }],
        outputs: [
          { capacity: 200n, lock: user, type: udt },
          { capacity: 200n, lock: user, type: where === 'output' ? ownerType : undefined },
        ],
        outputsData: [ccc.hexFrom(amount(9n)), '0x'],
      });
      return xUdt.verify(makeTxContext(tx, [other]), {
        script: udt,
        kind: 'type',
        inputIndices: [],
        outputIndices: [0],
      });
    };
    expect(mint(0x80000000, 'input')).toBe(0);
    expect(mint(0x80000000, 'output')).toBe(-52);
    expect(mint(0x40000000, 'output')).toBe(0);
    expect(mint(0x40000000, 'input')).toBe(-52);
    expect(mint(0, 'input')).toBe(-52);
  });
});
