/**
 * The delivery inbox: deliveries this process has claimed and will attempt, in memory, between the outbox
 * (`Events.emit`, which claims the deliveries it writes when there is room, and hands them over once the
 * transaction has committed) and the delivery worker (which attempts them, and claims due deliveries from the
 * table when the inbox has room: those of other processes, retries, overflow, lapsed leases).
 *
 * Room is counted, not queued: `backlog` is every delivery reserved, waiting or being attempted here. The worker
 * opens the inbox with a capacity small enough that the last delivery in it starts and ends within its lease even
 * if every attempt before it runs to the time-out (see `capacityFor`), so nothing claimed here can be taken by
 * another process while it waits. Without a worker (the CLI, tests of one service) the inbox stays closed and every
 * delivery is written unclaimed, for the poll to find.
 */
import { Duration, Effect, Queue } from "effect"
import type { ClaimedDelivery } from "../Domain/Webhook.js"

/** `concurrency` attempts in flight; the inbox holds what those can finish, back to back, within the lease. */
export const capacityFor = (config: {
  readonly concurrency: number
  readonly timeout: Duration.Duration
  readonly claimTimeout: Duration.Duration
}): number => {
  const timeout = Math.max(1, Duration.toMillis(config.timeout))
  const rounds = Math.floor((Duration.toMillis(config.claimTimeout) - timeout) / timeout)
  return config.concurrency * Math.max(1, rounds)
}

export class DeliveryInbox extends Effect.Service<DeliveryInbox>()("DeliveryInbox", {
  effect: Effect.gen(function* () {
    const ready = yield* Queue.unbounded<ClaimedDelivery>()
    // Handed over and not yet started, by id: what shutdown gives back. Kept apart from the queue because a taker
    // interrupted just as a delivery reaches it (shutdown) takes the delivery with it (Effect 3's `Queue.take`);
    // the delivery stays here until an attempt starts.
    const unstarted = new Map<string, ClaimedDelivery>()
    // One pending ring is enough, however many happen before the worker looks.
    const bell = yield* Queue.sliding<void>(1)
    let capacity = 0
    let leaseMs = 0
    let lowWater = 0
    let backlog = 0
    // Deliveries were left unclaimed for want of room: ring when room opens.
    let wanted = false

    const ring = Queue.offer(bell, undefined).pipe(Effect.asVoid)

    /** Reserves room for up to `count` deliveries; answers how many (0 while closed). Plain and synchronous. */
    const reserve = (count: number): number => {
      const granted = Math.max(0, Math.min(count, capacity - backlog))
      backlog += granted
      if (granted < count) wanted = true
      return granted
    }

    /**
     * Reserves all the room left, for the worker's claim, once at least half the inbox is free or a runner would
     * otherwise stand idle; before that (or with none) it answers 0 and asks to be woken when so. So the table is
     * claimed from in batches, not a few rows each time some attempts end (every claim is a statement, a read-back
     * and a commit), but never while a runner waits with deliveries due in the table.
     */
    const reserveAll = (): number => {
      const granted = backlog > lowWater ? 0 : Math.max(0, capacity - backlog)
      backlog += granted
      if (granted === 0) wanted = true
      return granted
    }

    /** Gives back room: reserved deliveries that were not handed over, or attempts that ended. */
    const release = (count: number): boolean => {
      backlog -= count
      if (wanted && backlog <= lowWater) {
        wanted = false
        return true
      }
      return false
    }

    return {
      /**
       * The worker opens the inbox when it starts (room for `size` deliveries, attempted by `runners` at a time) and
       * closes it when it stops. With the room at or under `runners - 1`, at least one runner has nothing to take:
       * where the inbox holds little more than the runners (short leases), claiming only at half free would leave
       * runners idle until their neighbours end too — two of three busy, in lockstep, with work waiting.
       */
      open: (size: number, lease: Duration.Duration, runners: number) =>
        Effect.sync(() => {
          capacity = size
          leaseMs = Duration.toMillis(lease)
          lowWater = Math.max(Math.floor(size / 2), runners - 1)
        }),
      close: Effect.sync(() => {
        capacity = 0
      }),
      reserve,
      reserveAll: Effect.sync(reserveAll),
      /** How long a claim made here holds, in milliseconds. */
      lease: () => leaseMs,
      /** Room reserved and not used: given back; the worker is woken if it was waiting for room. */
      release: (count: number) => Effect.suspend(() => (count > 0 && release(count) ? ring : Effect.void)),
      /** Hands over claimed deliveries (their room was reserved). */
      hand: (deliveries: ReadonlyArray<ClaimedDelivery>) =>
        deliveries.length === 0
          ? Effect.void
          : Effect.suspend(() => {
              for (const delivery of deliveries) unstarted.set(delivery.id, delivery)
              return Queue.offerAll(ready, deliveries)
            }).pipe(Effect.asVoid),
      /** The next delivery to attempt, waiting for one. Its attempt must say `started` before anything else. */
      take: Queue.take(ready),
      /** An attempt of `delivery` begins: shutdown no longer gives it back. Plain and synchronous. */
      started: (delivery: ClaimedDelivery): void => {
        unstarted.delete(delivery.id)
      },
      /**
       * Every delivery handed over whose attempt has not started, taken at once (shutdown): those still queued, and
       * any a taker interrupted at the moment it was handed one took with it.
       */
      takeUnstarted: Effect.map(Queue.takeAll(ready), (): ReadonlyArray<ClaimedDelivery> => {
        const left = [...unstarted.values()]
        unstarted.clear()
        return left
      }),
      /** Says that deliveries are waiting unclaimed (a commit that found no room, a scheduled retry). */
      ring,
      /** Waits for a ring. */
      wait: Queue.take(bell)
    } as const
  })
}) {}
