/**
 * `pubsub` module: WebSocket subscriptions to store changes (seed §Events). Each subscription
 * gets notifications `{"method":"store_changes","params":{"subscription":<id>,"result":<change>}}`
 * until it is cancelled or its connection closes. Sending is non-blocking; a subscriber that
 * stops reading is disconnected by the server instead of holding the node back.
 */
import { z } from 'zod';
import type { StoreChangeBus } from '../../store/index.ts';
import { RpcMethodError } from '../errors.ts';
import { type MethodSpec, method } from '../method.ts';

export const STORE_CHANGES_TOPIC = 'store_changes';

export function pubsubMethods(bus: StoreChangeBus): MethodSpec[] {
  let nextId = 1;
  /** subscription id → [connection id, cancel] */
  const subscriptions = new Map<number, { connectionId: number; cancel: () => void }>();
  return [
    method({
      name: 'subscribe_store_changes',
      module: 'pubsub',
      description:
        'WebSocket only: subscribes to store changes; notifications `store_changes` carry `{subscription, result}`. Answers the subscription id.',
      result: z.number().int(),
      params: null,
      handler: (_params, ctx) => {
        const connection = ctx.connection;
        if (ctx.transport !== 'ws' || !connection) {
          throw new RpcMethodError(
            'WebSocketRequired',
            'subscribe_store_changes needs a WebSocket connection',
          );
        }
        const id = nextId++;
        const cancel = bus.subscribe((change) =>
          connection.notify(STORE_CHANGES_TOPIC, { subscription: id, result: change }),
        );
        subscriptions.set(id, { connectionId: connection.id, cancel });
        connection.onClose(() => {
          cancel();
          subscriptions.delete(id);
        });
        return id;
      },
    }),
    {
      name: 'unsubscribe_store_changes',
      module: 'pubsub',
      description:
        'WebSocket only: cancels a subscription of this connection (`params: [<subscription id>]`); answers whether one was cancelled.',
      result: z.boolean(),
      params: null,
      positional: z.tuple([z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)])], {
        error: 'expected [<subscription id>]',
      }),
      handler: (params, ctx) => {
        const [id] = params as [number];
        const sub = subscriptions.get(id);
        // Only the connection that made a subscription may cancel it.
        if (!sub || sub.connectionId !== ctx.connection?.id) return false;
        sub.cancel();
        subscriptions.delete(id);
        return true;
      },
    },
  ];
}
