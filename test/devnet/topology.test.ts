import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkTopology, defaultTopology, loadTopology, parseTopology } from '../../src/devnet/topology.ts';

describe('devnet topology files', () => {
  it('reads the example shipped in examples/', () => {
    const t = loadTopology(path.join(import.meta.dirname, '../../examples/topology.yml'));
    expect(t.nodes).toBe(4);
    expect(t.peers).toHaveLength(3);
    expect(t.channels[2]).toMatchObject({
      from: 'carol',
      to: 'dave',
      funding: 1000,
      public: false,
      udt: false,
    });
    expect(() => checkTopology(t, ['alice', 'bob', 'carol', 'dave'])).not.toThrow();
    expect(() => checkTopology(t, ['alice', 'bob', 'carol'])).toThrow("unknown node 'dave'");
  });

  it('names the token of a token channel: the test UDT (true) or the test xUDT (xudt)', () => {
    const t = parseTopology(
      'channels: [{ from: a, to: b, funding: 9, udt: true }, { from: b, to: c, funding: 9, udt: xudt }]',
    );
    expect(t.channels.map((c) => c.udt)).toEqual([true, 'xudt']);
    expect(() => parseTopology('channels: [{ from: a, to: b, funding: 9, udt: sudt }]')).toThrow(
      /channels\.0\.udt/,
    );
  });

  it('names what is wrong', () => {
    expect(() => parseTopology('channels: [{ from: alice, to: bob, funding: -1 }]')).toThrow(
      /channels\.0\.funding/,
    );
    expect(() => parseTopology('peers: [[Alice, bob]]')).toThrow(
      /peers\.0\.0: node names are lower-case words/,
    );
    expect(() => checkTopology(parseTopology('peers: [[bob, bob]]'), ['bob'])).toThrow(
      /cannot peer with itself/,
    );
  });

  it('defaults to a line of channels', () => {
    expect(defaultTopology(['a', 'b', 'c'])).toEqual({
      peers: [
        ['a', 'b'],
        ['b', 'c'],
      ],
      channels: [
        { from: 'a', to: 'b', funding: 500, udt: false, public: true },
        { from: 'b', to: 'c', funding: 500, udt: false, public: true },
      ],
    });
    expect(fs.existsSync(path.join(import.meta.dirname, '../../examples/topology.yml'))).toBe(true);
  });
});
