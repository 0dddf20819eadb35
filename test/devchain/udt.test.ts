/** Simple UDT and xUDT verifiers driven directly: owner mode, conservation, args and data rules. */
import { ccc } from '@ckb-ccc/core';
import { describe, expect, it } from 'vitest';
import { makeTxContext, type ResolvedCell } from '../../src/devchain/scripts/context.ts';
import { simpleUdt, xUdt } from '../../src/devchain/scripts/udt.ts';

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
  it('simple UDT needs exactly 32-byte args; xUDT accepts 32 or 36 with zero flags only', () => {
    const h = owner.hash();
    expect(run(simpleUdt, ccc.hexFrom(`${h}00`), [[user, 1n]], [1n])).toBe(-1);
    expect(run(xUdt, h, [[user, 1n]], [1n])).toBe(0);
    expect(run(xUdt, ccc.hexFrom(`${h}01000000`), [[user, 1n]], [1n])).toBe(-1); // extension scripts
  });
});
