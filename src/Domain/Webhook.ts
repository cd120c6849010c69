/** Webhooks, their deliveries and delivery attempts: the records, and the field rules of a registration. */
import { Schema } from "effect"
import { EventType, eventTypes } from "./EventTypes.js"
import { Stored } from "./Ids.js"
import { oneOf } from "./Lists.js"
import { HttpUrl, optional } from "./Payload.js"
import { InstantCeilFromString, InstantFromString, Timestamp } from "./Time.js"

export const WebhookStatus = oneOf("active", "failed")
export type WebhookStatus = typeof WebhookStatus.Type
export const DeliveryStatus = oneOf("pending", "delivered", "failed")
/** How a webhook's deliveries are signed: with its shared secret (HMAC), or with its Ed25519 private key. */
export const WebhookSignature = oneOf("hmac", "ed25519")
export type WebhookSignature = typeof WebhookSignature.Type
export type DeliveryStatus = typeof DeliveryStatus.Type

/** The most a webhook's `rate_limit` may be: attempts a second. */
export const RATE_LIMIT_MAX = 10_000
/**
 * A webhook's `rate_limit`: at most this many attempts to it start in any one-second window, across replicas; the
 * deliveries beyond it wait. Null: no limit.
 */
export const WebhookRateLimit = Schema.NullOr(
  Schema.Number.pipe(Schema.int(), Schema.between(1, RATE_LIMIT_MAX)).annotations({
    jsonSchema: { type: "integer", minimum: 1, maximum: RATE_LIMIT_MAX }
  })
).annotations({
  description:
    "At most this many attempts to the webhook start in any one-second window, across replicas (1 to 10000); the deliveries beyond it wait. Null: no limit"
})

export const Webhook = Schema.Struct({
  id: Stored.WebhookId,
  url: Schema.String,
  events: Schema.Array(EventType),
  status: WebhookStatus,
  signature: WebhookSignature.annotations({
    description:
      "`hmac`: signed with the shared secret (`v1,…` and `X-Service-Signature`); `ed25519`: signed with the webhook's private key (`v1a,…`), verified with `public_key`"
  }),
  public_key: Schema.NullOr(Schema.String).annotations({
    description: "An `ed25519` webhook's public key: `whpk_` and the base64 of its 32 raw bytes (null for `hmac`)"
  }),
  previous_public_key: Schema.NullOr(Schema.String).annotations({
    description:
      "The public key rotated out, while its private key still signs (until the rotation's `previous_secret_expires_at`)"
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
  failed_at: Schema.NullOr(Timestamp),
  disabled_at: Schema.NullOr(Timestamp).annotations({
    description: "Set while an operator has disabled the webhook: nothing is sent to it, its deliveries wait"
  }),
  rate_limit: WebhookRateLimit
}).annotations({ identifier: "Webhook" })
export type Webhook = typeof Webhook.Type

/**
 * How a webhook's endpoint has been answering, as its list shows it: its latest attempt, and its attempts of the last
 * 24 hours (scheduled and manual). Null on a webhook that has had no attempt yet.
 */
export const WebhookHealth = Schema.Struct({
  last_attempt_at: Timestamp.annotations({ description: "When the latest attempt was made" }),
  last_status_code: Schema.NullOr(Schema.Int).annotations({
    description: "The latest attempt's HTTP status (null when it got no response: a time-out, a refused connection)"
  }),
  last_outcome: oneOf("succeeded", "failed").annotations({ description: "Whether the latest attempt succeeded" }),
  attempts_24h: Schema.Int.annotations({ description: "Attempts made in the last 24 hours" }),
  success_rate_24h: Schema.NullOr(Schema.Number).annotations({
    description:
      "The share of those attempts that succeeded, from 0 to 1 (four decimals); null when there was none in 24 hours"
  })
}).annotations({ identifier: "WebhookHealth" })
export type WebhookHealth = typeof WebhookHealth.Type

/**
 * A webhook as its list shows it: the record and its `health`. Only the list carries it: it changes with every
 * attempt, and a single read's `ETag` (which an edit's `If-Match` names) must change only when the webhook does.
 */
export const WebhookWithHealth = Schema.Struct({
  ...Webhook.fields,
  health: Schema.NullOr(WebhookHealth).annotations({
    description: "The latest attempt and the last 24 hours' share of successes; null before the first attempt"
  })
}).annotations({ identifier: "WebhookWithHealth" })
export type WebhookWithHealth = typeof WebhookWithHealth.Type

export const CreatedWebhook = Schema.Struct({
  ...Webhook.fields,
  secret: optional(
    Schema.String.annotations({
      description: "Only when the service generated the secret (`whsec_…`): shown this once"
    })
  )
}).annotations({ identifier: "CreatedWebhook" })
export type CreatedWebhook = typeof CreatedWebhook.Type

export const WebhookUrl = HttpUrl.pipe(
  Schema.filter((value) => {
    const url = new URL(value)
    return (url.username === "" && url.password === "") || "must not carry credentials"
  })
)
export const WebhookEvents = Schema.Array(EventType).pipe(
  Schema.minItems(1, { message: () => "must name at least one event type" })
)
export const WebhookSecret = Schema.String.pipe(
  Schema.minLength(16, { message: () => "must be at least 16 characters" }),
  Schema.maxLength(256, { message: () => "must be at most 256 characters" })
)

/** What registering a webhook takes (the body of `POST /v1/webhooks`). */
export const NewWebhook = Schema.Struct({
  url: WebhookUrl,
  events: WebhookEvents,
  secret: optional(WebhookSecret),
  signature: optional(WebhookSignature),
  rate_limit: optional(WebhookRateLimit)
})
export type NewWebhook = typeof NewWebhook.Type

/** What may change in a webhook (the body of `PUT /v1/webhooks/:id`); `status` only back to `active`. */
export const WebhookPatch = Schema.Struct({
  url: optional(WebhookUrl),
  events: optional(WebhookEvents),
  secret: optional(WebhookSecret),
  status: optional(Schema.Literal("active").annotations({ message: () => "can only be set to active" })),
  rate_limit: optional(WebhookRateLimit)
})
export type WebhookPatch = typeof WebhookPatch.Type

export type WebhookSort = "created_at" | "updated_at"

/** The body of `POST /v1/webhooks/:id/rotate-secret`: a new secret, or none and the service makes one. */
export const SecretRotation = Schema.Struct({ secret: optional(WebhookSecret) })
export type SecretRotation = typeof SecretRotation.Type

export const RotatedWebhook = Schema.Struct({
  ...Webhook.fields,
  previous_secret_expires_at: Timestamp.annotations({
    description:
      "Until then every delivery is signed with the previous secret too (the second `webhook-signature` entry)"
  }),
  secret: optional(
    Schema.String.annotations({ description: "Only when the service generated the secret: shown this once" })
  )
}).annotations({ identifier: "RotatedWebhook" })
export type RotatedWebhook = typeof RotatedWebhook.Type

/** The body of `POST /v1/webhooks/:id/recover`: failed deliveries of events created in `[since, until)`. */
export const Recovery = Schema.Struct({
  since: InstantFromString,
  until: optional(InstantCeilFromString)
})
export type Recovery = typeof Recovery.Type

export const Recovered = Schema.Struct({
  queued: Schema.Int.annotations({ description: "Failed deliveries given one new attempt now" })
}).annotations({ identifier: "Recovered" })
export type Recovered = typeof Recovered.Type

/** Sent to one webhook by `POST /v1/webhooks/:id/test`; it cannot be subscribed to. */
export const TEST_EVENT = "webhook.test"
/** What a delivery can carry: the subscribable types and the test event. */
export const DeliveryEventType = Schema.Literal(...eventTypes, TEST_EVENT).annotations({
  identifier: "DeliveryEventType",
  message: () => `must be one of: ${[...eventTypes, TEST_EVENT].join(", ")}`
})
export type DeliveryEventType = typeof DeliveryEventType.Type

export const Delivery = Schema.Struct({
  id: Stored.DeliveryId,
  webhook_id: Stored.WebhookId,
  event_id: Stored.EventId,
  event_type: DeliveryEventType,
  status: DeliveryStatus,
  attempt_count: Schema.Int,
  next_attempt_at: Schema.NullOr(Timestamp),
  last_attempt_at: Schema.NullOr(Timestamp),
  last_status_code: Schema.NullOr(Schema.Int).annotations({
    description: "The latest attempt's HTTP status (null before any attempt, or when it got no response)"
  }),
  resource_name: Schema.NullOr(Schema.String).annotations({
    description: "The name of the resource the event is about (its data.name: a project's name), null when it has none"
  }),
  created_at: Timestamp
}).annotations({ identifier: "Delivery" })
export type Delivery = typeof Delivery.Type

/** A delivery of one event, as the event's list of deliveries shows it: with the URL of the webhook it goes to. */
export const EventDelivery = Schema.Struct({
  ...Delivery.fields,
  webhook_url: Schema.String.annotations({ description: "The URL of the webhook the delivery goes to" })
}).annotations({ identifier: "EventDelivery" })
export type EventDelivery = typeof EventDelivery.Type

export const attemptFields = {
  number: Schema.Int,
  attempted_at: Timestamp,
  duration_ms: Schema.Int,
  status_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  response_body: Schema.NullOr(Schema.String),
  outcome: oneOf("succeeded", "failed"),
  trigger: oneOf("schedule", "manual").annotations({
    description:
      "What made the attempt: the retry schedule (at most five, counted in attempt_count) or a manual retry (retry, recover, the dashboard's Redeliver), which is extra"
  })
}

/** Header names (lower-case) and values. */
export const Headers = Schema.Record({ key: Schema.String, value: Schema.String })

export const Attempt = Schema.Struct({
  ...attemptFields,
  request_headers: Schema.NullOr(Headers).annotations({
    description: "The headers sent, signatures included (null for attempts made before they were recorded)"
  }),
  response_headers: Schema.NullOr(Headers).annotations({ description: "Null without a response" })
}).annotations({ identifier: "DeliveryAttempt" })
export type Attempt = typeof Attempt.Type

/** An attempt as stored: with the delivery it belongs to, its headers as JSON text. */
export const AttemptRecord = Schema.Struct({
  ...attemptFields,
  delivery_id: Stored.DeliveryId,
  request_headers: Schema.String,
  response_headers: Schema.NullOr(Schema.String)
})
export type AttemptRecord = typeof AttemptRecord.Type

export const DeliveryWithAttempts = Schema.Struct({
  ...Delivery.fields,
  payload: Schema.String.annotations({
    description: "The request body sent, as a string: the same bytes on every attempt"
  }),
  attempts: Schema.Array(Attempt)
}).annotations({ identifier: "DeliveryWithAttempts" })
export type DeliveryWithAttempts = typeof DeliveryWithAttempts.Type

/** A delivery claimed by a worker, with everything its attempt needs. */
export const ClaimedDelivery = Schema.Struct({
  id: Stored.DeliveryId,
  webhook_id: Stored.WebhookId,
  event_id: Stored.EventId,
  event_type: Schema.String,
  /** The scheduled attempts made so far. */
  attempt_count: Schema.Int,
  /** Every attempt made so far, manual ones too: the next attempt's number follows it. */
  attempts_made: Schema.Int,
  status: DeliveryStatus,
  /** 1 when a manual attempt is asked for (it is made before a scheduled one due with it), else 0. */
  manual: Schema.Int,
  /** When the next scheduled attempt falls due (for the lag metric), null when none is. */
  next_attempt_at: Schema.NullOr(Timestamp),
  url: Schema.String,
  signature: WebhookSignature,
  /**
   * As stored (encrypted, src/Secrets/KeyRing.ts) until the worker decrypts it for the attempt; for an `ed25519`
   * webhook, its private key (PKCS #8, base64).
   */
  secret: Schema.String,
  /** The secret rotated out, which signs too until `previous_secret_expires_at`. */
  previous_secret: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(Schema.String),
  webhook_status: WebhookStatus,
  /** The event's JSON, sent as stored. */
  payload: Schema.String,
  trace_context: Schema.NullOr(Schema.String),
  claim_token: Schema.String,
  /** The webhook's `rate_limit` when claimed: null sends at once, a number paces the attempt (Delivery/Pacer.ts). */
  rate_limit: Schema.NullOr(Schema.Int)
})
export type ClaimedDelivery = typeof ClaimedDelivery.Type
