/**
 * `prof` module (off by default): `pprof` records a CPU profile of the node for `duration_secs`
 * with the V8 inspector and writes it as a `.cpuprofile` (open it in Chrome DevTools or
 * speedscope) under `<base dir>/prof/`, returning its path.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { z } from 'zod';
import { RpcMethodError } from '../errors.ts';
import { type MethodSpec, method } from '../method.ts';
import { u64 } from '../schema.ts';

/** Longest profile accepted: profiling slows the node down. */
const MAX_SECONDS = 600n;

export function profMethods(outDir: string): MethodSpec[] {
  let running = false;
  return [
    method({
      name: 'pprof',
      module: 'prof',
      description:
        'Records a CPU profile of the node for `duration_secs` (default 10, at most 600) and answers the path of the `.cpuprofile` written.',
      result: z.strictObject({ path: z.string() }),
      params: z.object({ duration_secs: u64.optional() }),
      handler: async (p) => {
        const secs = p.duration_secs ?? 10n;
        if (secs < 1n || secs > MAX_SECONDS) {
          throw new RpcMethodError(
            'InvalidParameter',
            `duration_secs must be between 1 and ${MAX_SECONDS}, got ${secs}`,
          );
        }
        if (running) throw new RpcMethodError('ProfileRunning', 'a profile is already being recorded');
        running = true;
        const session = new Session();
        session.connect();
        try {
          await session.post('Profiler.enable');
          await session.post('Profiler.start');
          await new Promise((r) => setTimeout(r, Number(secs) * 1000));
          const { profile } = await session.post('Profiler.stop');
          fs.mkdirSync(outDir, { recursive: true });
          const file = path.join(outDir, `cpu-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`);
          fs.writeFileSync(file, JSON.stringify(profile));
          return { path: file };
        } finally {
          session.disconnect();
          running = false;
        }
      },
    }),
  ];
}
