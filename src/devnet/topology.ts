/**
 * A devnet topology file: which peers to connect and which channels to open.
 *
 *   peers: [[alice, bob], [bob, carol]]
 *   channels:
 *     - { from: alice, to: bob, funding: 500 }                  # CKB
 *     - { from: bob, to: carol, funding: 1000, udt: true, fee_ppm: 2000, public: true }  # test UDT
 *     - { from: carol, to: dave, funding: 1000, udt: xudt }                 # test xUDT
 */
import fs from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';

const name = z.string().regex(/^[a-z][a-z0-9_-]*$/, { error: 'node names are lower-case words' });

const schema = z.object({
  nodes: z.number().int().min(1).max(16).optional(),
  peers: z.array(z.tuple([name, name])).default([]),
  channels: z
    .array(
      z.object({
        from: name,
        to: name,
        /** Whole CKB, or whole token units for a UDT channel. */
        funding: z.number().positive(),
        /** A token channel: `true` the test UDT (simple UDT), `xudt` the test xUDT. */
        udt: z.union([z.boolean(), z.literal('xudt')]).default(false),
        public: z.boolean().default(true),
        fee_ppm: z.number().int().nonnegative().optional(),
      }),
    )
    .default([]),
});

export type Topology = z.output<typeof schema>;

export function parseTopology(text: string, source = 'topology'): Topology {
  const parsed = schema.safeParse(YAML.parse(text) ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${source}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

export function loadTopology(file: string): Topology {
  return parseTopology(fs.readFileSync(file, 'utf8'), file);
}

/** The default network: a line of nodes, each connected to the next, with a channel along it. */
export function defaultTopology(names: string[]): Topology {
  const pairs = names.slice(1).map((n, i) => [names[i]!, n] as [string, string]);
  return {
    peers: pairs,
    channels: pairs.map(([from, to]) => ({ from, to, funding: 500, udt: false, public: true })),
  };
}

export function checkTopology(t: Topology, names: string[]): void {
  const known = new Set(names);
  for (const [a, b] of t.peers) {
    for (const n of [a, b]) if (!known.has(n)) throw new Error(`topology: unknown node '${n}' in peers`);
    if (a === b) throw new Error(`topology: a node cannot peer with itself ('${a}')`);
  }
  for (const c of t.channels) {
    for (const n of [c.from, c.to])
      if (!known.has(n)) throw new Error(`topology: unknown node '${n}' in channels`);
  }
}
