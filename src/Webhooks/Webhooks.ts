import type { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Option } from "effect"
import { WebhookConfig } from "../Config.js"
import { type AuditAction, changesOf } from "../Domain/Audit.js"
import { Conflict, NotFound, ValidationFailed } from "../Domain/Errors.js"
import { type DeliveryId, type EventId, makeId, randomBase62, WebhookId } from "../Domain/Ids.js"
import type { ListQuery, Page } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import { nowIso } from "../Domain/Time.js"
import {
  type CreatedWebhook,
  type Delivery,
  type DeliveryStatus,
  type DeliveryWithAttempts,
  type EventDelivery,
  type NewWebhook,
  type Recovered,
  type Recovery,
  type RotatedWebhook,
  type SecretRotation,
  Webhook,
  type WebhookHealth,
  type WebhookPatch,
  type WebhookSort,
  type WebhookStatus,
  type WebhookWithHealth
} from "../Domain/Webhook.js"
import { type AuditOptions, Events } from "../Events/Events.js"
import { EventsRepo } from "../Events/Repo.js"
import { traced } from "../Observability/Traced.js"
import { isUniqueViolation } from "../Sql/Errors.js"
import { readForWrite, whenConditional } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { generateKeyPair } from "./Delivery/Ed25519.js"
import { checkTarget } from "./Delivery/Targets.js"
import { type DeliveryQuery, type HealthRow, WebhooksRepo } from "./Repo.js"

/** How far back `recover` reaches. */
const RECOVERY_WINDOW = Duration.days(14)

/** How far back a webhook's `health` counts its attempts. */
const HEALTH_WINDOW = Duration.hours(24)

/** A webhook's `health` from its row: the share of successes to four decimals, null without an attempt to share. */
const healthFrom = (row: HealthRow): WebhookHealth => ({
  last_attempt_at: row.last_attempt_at,
  last_status_code: row.last_status_code,
  last_outcome: row.last_outcome,
  attempts_24h: row.attempts,
  success_rate_24h: row.attempts === 0 ? null : Math.round((row.succeeded / row.attempts) * 10_000) / 10_000
})

const generatedSecret = () => `whsec_${randomBase62(32)}`

const noSecretForEd25519 = ValidationFailed.field(
  "secret",
  "cannot be set on a webhook with signature ed25519 (it is signed with a key pair)"
)

/** One webhook per URL per user: a second registration would deliver every event twice. */
const urlTaken =
  (url: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError, R>) =>
    Effect.catchAll(effect, (error) =>
      isUniqueViolation(error)
        ? Effect.fail(new Conflict({ message: `You already have a webhook for ${url}` }))
        : Effect.die(error)
    )

const orNotFound =
  <A>(kind: string, id: string) =>
  (found: Option.Option<A>): Effect.Effect<A, NotFound> =>
    Option.isSome(found) ? Effect.succeed(found.value) : Effect.fail(NotFound.resource(kind, id))

export class Webhooks extends Effect.Service<Webhooks>()("Webhooks", {
  dependencies: [WebhooksRepo.Default, EventsRepo.Default, Events.Default],
  effect: Effect.gen(function* () {
    const webhooksRepo = yield* WebhooksRepo
    const repo = orDie(webhooksRepo)
    const eventsRepo = orDie(yield* EventsRepo)
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))
    const { allowPrivateTargets, secretOverlap } = yield* Effect.orDie(WebhookConfig)

    /** Refuses targets that resolve to private addresses, as a validation failure on `url`. */
    const guard = (url: string) =>
      Effect.mapError(checkTarget(url, allowPrivateTargets), (refused) =>
        ValidationFailed.field("url", refused.message)
      )

    /** The audit record of a change to a webhook (named by its URL; never its secret). */
    const audit = (
      action: AuditAction,
      principal: Principal,
      hook: { readonly id: string; readonly url: string },
      changes?: AuditOptions["changes"]
    ) => events.record(action, { type: "webhook", id: hook.id }, { user: principal.userId, name: hook.url, changes })

    const find = (principal: Principal, id: WebhookId) =>
      Effect.flatMap(repo.find(principal.userId, id), orNotFound<Webhook>("webhook", id))

    /** The page of webhooks, each with its `health` (one statement for the whole page). */
    const list = traced("Webhooks.list")(function* (
      principal: Principal,
      query: ListQuery<WebhookSort, WebhookStatus>
    ) {
      const page = yield* repo.list(principal.userId, query)
      const since = new Date(Date.now() - Duration.toMillis(HEALTH_WINDOW)).toISOString()
      const rows = yield* repo.healthOf(
        page.items.map((hook) => hook.id),
        since
      )
      const health = new Map(rows.map((row) => [row.webhook_id, healthFrom(row)]))
      const withHealth: Page<WebhookWithHealth> = {
        ...page,
        items: page.items.map((hook) => ({ ...hook, health: health.get(hook.id) ?? null }))
      }
      return withHealth
    })

    const create = traced("Webhooks.create")(function* (principal: Principal, input: NewWebhook) {
      const signature = input.signature ?? "hmac"
      if (signature === "ed25519" && input.secret !== undefined) {
        return yield* Effect.fail(
          ValidationFailed.field("secret", "must not be given with signature ed25519 (it is signed with a key pair)")
        )
      }
      yield* guard(input.url)
      const pair = signature === "ed25519" ? yield* generateKeyPair : undefined
      const generated = input.secret === undefined && pair === undefined ? generatedSecret() : undefined
      const now = nowIso()
      const eventTypes = Array.from(new Set(input.events))
      const id = WebhookId.make(makeId("webhook"))
      // The repository as it is, for its unique-key clash is the caller's 409 (`urlTaken`).
      yield* urlTaken(input.url)(
        webhooksRepo
          .insert({
            id,
            user_id: principal.userId,
            url: input.url,
            events: eventTypes,
            signature,
            secret: pair?.privateKey ?? input.secret ?? generated ?? "",
            public_key: pair?.publicKey ?? null,
            rate_limit: input.rate_limit ?? null,
            created_at: now,
            updated_at: now
          })
          .pipe(Effect.zipRight(audit("webhook.created", principal, { id, url: input.url })), events.transaction)
      )
      const created: CreatedWebhook = {
        id,
        url: input.url,
        events: eventTypes,
        status: "active",
        signature,
        public_key: pair?.publicKey ?? null,
        previous_public_key: null,
        created_at: now,
        updated_at: now,
        failed_at: null,
        disabled_at: null,
        rate_limit: input.rate_limit ?? null,
        ...(generated !== undefined ? { secret: generated } : {})
      }
      return created
    })

    const get = traced("Webhooks.get")(function* (principal: Principal, id: WebhookId) {
      return yield* find(principal, id)
    })

    const update = traced("Webhooks.update")(function* (principal: Principal, id: WebhookId, patch: WebhookPatch) {
      const before = yield* readForWrite(Webhook, "webhooks", id, find(principal, id))
      if (patch.secret !== undefined && before.signature === "ed25519") yield* Effect.fail(noSecretForEd25519)
      if (patch.url !== undefined) yield* guard(patch.url)
      const now = nowIso()
      const recordUpdate = Effect.flatMap(repo.find(principal.userId, id), (after) =>
        Option.isNone(after)
          ? Effect.void
          : audit("webhook.updated", principal, after.value, {
              ...changesOf(before, after.value, ["url", "events", "status", "rate_limit"]),
              // That the secret changed, never what it was or is.
              ...(patch.secret !== undefined ? { secret: ["[redacted]", "[redacted]"] as const } : {})
            })
      )
      yield* urlTaken(patch.url ?? "that URL")(
        webhooksRepo
          .update(id, {
            ...(patch.url !== undefined ? { url: patch.url } : {}),
            ...(patch.events !== undefined ? { events: Array.from(new Set(patch.events)) } : {}),
            // A secret set here replaces the old one at once: no overlap, and a rotated-out one stops verifying too.
            ...(patch.secret !== undefined
              ? { secret: patch.secret, previous_secret: null, previous_secret_expires_at: null }
              : {}),
            ...(patch.status === "active" ? { status: "active" as const, failed_at: null } : {}),
            ...(patch.rate_limit !== undefined ? { rate_limit: patch.rate_limit } : {}),
            updated_at: now
          })
          .pipe(Effect.zipRight(recordUpdate), events.transaction)
      )
      return yield* find(principal, id)
    }, whenConditional)

    /** The operator's view (the CLI): every webhook, or those with `status` (`active`, `failed`, `disabled`). */
    const listAll = traced("Webhooks.listAll")(function* (status: string | null) {
      return yield* repo.listAll(status)
    })

    /**
     * The operator's switch (the CLI): a disabled webhook gets no new deliveries and its pending ones wait,
     * unclaimed, until it is enabled (the servers' delivery workers then claim them as they poll). A change is
     * audited as `webhook.updated` (`{disabled: [before, after]}`, in its owner's security log; the actor is whoever
     * the context names: the CLI's operator); switching it to what it is already changes and records nothing.
     * Answers the webhook as the operator sees it.
     */
    const setDisabled = traced("Webhooks.setDisabled")(function* (id: string, disabled: boolean) {
      yield* repo.setDisabled(id, disabled ? nowIso() : null).pipe(
        Effect.tap((switched) =>
          Option.isNone(switched)
            ? Effect.void
            : events.record(
                "webhook.updated",
                { type: "webhook", id: switched.value.id },
                { user: switched.value.user_id, name: switched.value.url, changes: { disabled: [!disabled, disabled] } }
              )
        ),
        transaction
      )
      const found = yield* repo.findForOperator(id)
      if (found === undefined) return yield* Effect.fail(NotFound.resource("webhook", id))
      return found
    })

    const remove = traced("Webhooks.remove")(function* (principal: Principal, id: WebhookId) {
      const hook = yield* readForWrite(Webhook, "webhooks", id, find(principal, id))
      yield* repo.remove(id).pipe(Effect.zipRight(audit("webhook.deleted", principal, hook)), transaction)
    }, whenConditional)

    const deliveries = traced("Webhooks.deliveries")(function* (
      principal: Principal,
      id: WebhookId,
      query: DeliveryQuery
    ) {
      yield* find(principal, id)
      return yield* repo.listDeliveries(id, query)
    })

    /**
     * The deliveries of an event to the caller's webhooks (`GET /v1/events/:event_id/deliveries`): the event must be
     * one the caller may read in the events feed (its audience holds them), else it is not found.
     */
    const eventDeliveries = traced("Webhooks.eventDeliveries")(function* (
      principal: Principal,
      eventId: EventId,
      query: ListQuery<"created_at", DeliveryStatus>
    ) {
      const event = yield* eventsRepo.findFor(principal.userId, eventId)
      if (Option.isNone(event)) return yield* Effect.fail(NotFound.resource("event", eventId))
      const page: Page<EventDelivery> = yield* repo.listEventDeliveries(principal.userId, eventId, query)
      return page
    })

    /** A delivery's row read with its attempts agrees with them: the latest attempt is the row's last one. */
    const agree = (found: Delivery, attempts: ReadonlyArray<{ readonly attempted_at: string }>): boolean =>
      (attempts.at(-1)?.attempted_at ?? null) === found.last_attempt_at

    const findDelivery = (principal: Principal, id: WebhookId, deliveryId: DeliveryId) =>
      Effect.flatMap(find(principal, id), () =>
        Effect.flatMap(repo.findDelivery(id, deliveryId), orNotFound<Delivery>("delivery", deliveryId))
      )

    const delivery = traced("Webhooks.delivery")(function* (
      principal: Principal,
      id: WebhookId,
      deliveryId: DeliveryId
    ) {
      // The delivery's row and its attempts are two statements. The recorder writes an attempt and the delivery's
      // new state together, but between the two reads it may commit one: the page would show attempt 6 succeeded
      // beside a delivery still `failed`. The two agree when the latest attempt is the row's `last_attempt_at`;
      // until they do (a few rounds at most: a row read after the attempts is as new as they are), both are read
      // again.
      let found = yield* findDelivery(principal, id, deliveryId)
      let attempts = yield* repo.attemptsOf(deliveryId)
      for (let round = 0; round < 3 && !agree(found, attempts); round++) {
        found = yield* findDelivery(principal, id, deliveryId)
        attempts = yield* repo.attemptsOf(deliveryId)
      }
      const { payload } = yield* repo.payloadOf(deliveryId)
      const withAttempts: DeliveryWithAttempts = { ...found, payload, attempts }
      return withAttempts
    })

    /**
     * A new secret (given, or generated and shown this once); the current one keeps verifying, as the second
     * `webhook-signature` entry, for `WEBHOOK_SECRET_OVERLAP`.
     */
    const rotateSecret = traced("Webhooks.rotateSecret")(function* (
      principal: Principal,
      id: WebhookId,
      input: SecretRotation
    ) {
      const current = yield* find(principal, id)
      if (current.signature === "ed25519" && input.secret !== undefined) yield* Effect.fail(noSecretForEd25519)
      // An Ed25519 webhook gets a new key pair; its private key is never shown.
      const pair = current.signature === "ed25519" ? yield* generateKeyPair : undefined
      const generated = input.secret === undefined && pair === undefined ? generatedSecret() : undefined
      const now = new Date()
      const expiresAt = new Date(now.getTime() + Duration.toMillis(secretOverlap)).toISOString()
      // Recorded only when the rotation found the webhook: one deleted since it was read is 404, with no record.
      const found = yield* repo
        .rotateSecret(
          id,
          pair?.privateKey ?? input.secret ?? generated ?? "",
          pair?.publicKey ?? null,
          expiresAt,
          now.toISOString()
        )
        .pipe(
          Effect.tap((rotated) => (rotated ? audit("webhook.secret_rotated", principal, current) : Effect.void)),
          transaction
        )
      if (!found) return yield* Effect.fail(NotFound.resource("webhook", id))
      const hook = yield* find(principal, id)
      const rotated: RotatedWebhook = {
        ...hook,
        previous_secret_expires_at: expiresAt,
        ...(generated !== undefined ? { secret: generated } : {})
      }
      return rotated
    })

    /**
     * A `webhook.test` event to this webhook alone, delivered (signed, retried, logged) like any other, recorded as
     * `webhook.tested` in its transaction.
     */
    const test = traced("Webhooks.test")(function* (principal: Principal, id: WebhookId) {
      const hook = yield* find(principal, id)
      const deliveryId = yield* events.emitTest(id).pipe(
        Effect.tap((made) => (Option.isSome(made) ? audit("webhook.tested", principal, hook) : Effect.void)),
        transaction
      )
      if (Option.isNone(deliveryId)) return yield* Effect.fail(NotFound.resource("webhook", id))
      return yield* findDelivery(principal, id, deliveryId.value)
    })

    /** One manual attempt now for each failed delivery of events created in `[since, until)`, at most 14 days back. */
    const recover = traced("Webhooks.recover")(function* (principal: Principal, id: WebhookId, input: Recovery) {
      const hook = yield* find(principal, id)
      const now = Date.now()
      const until = input.until ?? new Date(now).toISOString()
      const earliest = new Date(now - Duration.toMillis(RECOVERY_WINDOW)).toISOString()
      if (input.since < earliest) {
        return yield* Effect.fail(
          ValidationFailed.field("since", `must be at most 14 days ago (not before ${earliest})`)
        )
      }
      if (input.since >= until) return yield* Effect.fail(ValidationFailed.field("until", "must be after since"))
      const queued = yield* repo.recover(id, input.since, until).pipe(
        Effect.tap(() => audit("webhook.recovered", principal, hook)),
        transaction
      )
      if (queued > 0) yield* events.wake
      const recovered: Recovered = { queued }
      return recovered
    })

    /**
     * The dashboard's Redeliver: one extra attempt now, outside the schedule (any status, delivered too). Its success
     * ends the delivery; its failure changes neither the delivery's status nor its schedule.
     */
    const retry = traced("Webhooks.retry")(function* (principal: Principal, id: WebhookId, deliveryId: DeliveryId) {
      const hook = yield* find(principal, id)
      yield* findDelivery(principal, id, deliveryId)
      yield* repo
        .scheduleNow(deliveryId)
        .pipe(
          Effect.zipRight(
            events.record(
              "delivery.retried",
              { type: "delivery", id: deliveryId },
              { user: principal.userId, name: hook.url }
            )
          ),
          transaction
        )
      // Due now: the worker may be asleep until a later delivery falls due.
      yield* events.wake
      return yield* findDelivery(principal, id, deliveryId)
    })

    return {
      list,
      create,
      get,
      update,
      remove,
      deliveries,
      eventDeliveries,
      delivery,
      retry,
      rotateSecret,
      test,
      recover,
      listAll,
      setDisabled
    } as const
  })
}) {}
