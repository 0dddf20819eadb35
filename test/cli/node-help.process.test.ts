/**
 * `strand node --help`: the configuration flags listed under their sections, each once, generated
 * from the field table (`src/node/config-fields.ts`), not a flat list of config paths.
 */
import { describe, expect, it } from 'vitest';
import { CONFIG_FIELDS, flagNames } from '../../src/node/config-fields.ts';
import { runStrand } from '../helpers/node-process.ts';

describe('strand node --help', { timeout: 60_000 }, () => {
  it('lists every field under its section heading, with its help line', async () => {
    const r = await runStrand(['node', '--help']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    const sections = [...new Set(CONFIG_FIELDS.map((d) => d.section))];
    expect(sections.length).toBeGreaterThan(3);
    const headingAt = (s: string) => lines.indexOf(`${s}:`);
    // Headings in the table's order, each present once.
    const at = sections.map(headingAt);
    for (const i of at) expect(i).toBeGreaterThan(0);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    for (const def of CONFIG_FIELDS) {
      const flag = flagNames(def)[0]!;
      const found = lines.findIndex((l) => new RegExp(`^\\s+(-s, )?--${flag} `).test(l));
      expect(found, flag).toBeGreaterThan(0);
      // Under its own section: after its heading, before the next one.
      const mine = at[sections.indexOf(def.section)]!;
      const next = at.find((i) => i > mine) ?? lines.length;
      expect(found, flag).toBeGreaterThan(mine);
      expect(found, flag).toBeLessThan(next);
      expect(lines[found]).toContain(def.help.slice(0, 20));
    }
    // No line names a field by its dotted path alone (the old flat list).
    expect(r.stdout).not.toMatch(/--rpc-listening-addr <value>\s+rpc\.listening_addr$/m);
    // fnn's older flag spellings still parse but are not listed.
    expect(r.stdout).not.toContain('--rpc-biscuit-public-key');
    expect(r.stdout).toContain('FIBER_SECRET_KEY_PASSWORD');
  });
});
