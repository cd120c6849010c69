/**
 * The delivery recorder: writes the outcomes of delivery attempts, a batch at a time (the worker's group commit,
 * src/Webhooks/Delivery/Worker.ts). Two implementations of one interface, under the same tests
 * (test/webhooks/recorder.service.test.ts and the webhook end-to-end tests):
 *
 * - `idiomatic` (src/Webhooks/RecorderIdiomatic.ts): `sql` templates, the steps of a batch in one transaction, the
 *   same on both engines;
 * - `fast` (src/Webhooks/RecorderFast.ts), PostgreSQL only: the whole batch as one statement of fixed text by batch
 *   size (src/Sql/Direct.ts).
 *
 * Each implementation's module gives its layer; src/Webhooks/RecorderLive.ts chooses one: on PostgreSQL by
 * `FAST_PATHS` (src/Config.ts: `delivery-recorder` runs the fast one, as the default, `all`, does), on SQLite the
 * idiomatic one always (the fast one earned nothing there). This module knows neither:
 * the dependencies point one way. docs/fast-paths.md says what the fast one saves.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, type Effect } from "effect"
import type { AttemptRecord, DeliveryStatus } from "../Domain/Webhook.js"

/** A claimed delivery's outcome, to be written if the claim is still held. */
export interface Settlement {
  readonly id: string
  readonly claim_token: string
  readonly status: DeliveryStatus
  readonly attempt_count: number
  readonly next_attempt_at: string | null
  readonly last_attempt_at: string
  /** What made the attempt: a manual one answers the manual retry asked for (a scheduled one leaves it asked for). */
  readonly trigger: "schedule" | "manual"
}

/** One outcome for the recorder to write: the delivery's next state, its attempt, and whether it decides its webhook. */
export interface Recording {
  readonly settlement: Settlement
  readonly attempt: AttemptRecord
  readonly webhook_id: string
  /** A success, or a delivery's last failure: the webhook's status follows the latest of these. */
  readonly decisive: boolean
}

/** What a batch of recordings wrote: the deliveries whose claims were still held, by id. */
export interface Recorded {
  readonly kept: ReadonlySet<string>
  /** The deliveries whose last failure turned their webhook `failed` (it was not before). */
  readonly failedBy: ReadonlySet<string>
}

export interface DeliveryRecorderService {
  /** Which implementation this is: the worker says so when it starts. */
  readonly kind: "fast" | "idiomatic"
  /**
   * Writes a batch of outcomes, given in the order they were attempted: each delivery's next state and its attempt
   * (only claims this process still holds: a claim that lapsed and was taken again is the other claimant's to
   * record), and each webhook's status after the latest decisive outcome among them (a success makes a failed
   * webhook active, a delivery's last failure makes it failed). All or nothing. `failedBy` names only webhooks this
   * batch turned `failed`.
   */
  readonly record: (recordings: ReadonlyArray<Recording>, now: string) => Effect.Effect<Recorded, SqlError>
}

export class DeliveryRecorder extends Context.Tag("DeliveryRecorder")<DeliveryRecorder, DeliveryRecorderService>() {}
