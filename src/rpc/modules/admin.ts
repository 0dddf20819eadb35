/** `admin` module (off by default): online backups. */
import { z } from 'zod';
import { DomainError, toHexQuantity } from '../../codec/index.ts';
import type { BackupResult } from '../../store/index.ts';
import { RpcMethodError } from '../errors.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';

export interface AdminService {
  /** Writes a backup to `path` (absolute, absent or empty), or to a fresh default directory. */
  backup(path: string | undefined): Promise<BackupResult>;
}

export function adminMethods(svc: AdminService): MethodSpec[] {
  return [
    method({
      name: 'backup_now',
      module: 'admin',
      description:
        'Writes a consistent copy of the store and the key files to `path` (or a new directory under `<base dir>/backups/`) while the node keeps running.',
      result: z.strictObject({ path: z.string(), size: R.hexQ, created_at: R.hexQ }),
      params: z.object({ path: z.string().min(1).max(4096).optional() }),
      handler: async (p) => {
        try {
          const r = await svc.backup(p.path);
          return { path: r.path, size: toHexQuantity(r.size), created_at: toHexQuantity(r.created_at) };
        } catch (e) {
          // A refused path already says which field and why.
          if (e instanceof DomainError) throw e;
          throw new RpcMethodError('BackupFailed', `Backup failed: ${(e as Error).message}`);
        }
      },
    }),
  ];
}
