/**
 * Identifiers: `<prefix>_<26 chars>` — a UUIDv7 written in Crockford base32, as TypeID does, so ids sort by
 * creation time. Within one millisecond a 12-bit counter (RFC 9562 method 1) keeps ids from one process increasing.
 */
import { Schema } from "effect"

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

let lastMs = 0
let counter = 0

const uuidv7Bytes = (): Uint8Array => {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  let ms = Date.now()
  if (ms <= lastMs) {
    counter++
    if (counter > 0xfff) {
      // Counter exhausted within this millisecond: borrow the next one.
      lastMs++
      counter = 0
    }
    ms = lastMs
  } else {
    lastMs = ms
    counter = (((bytes[6] ?? 0) & 0x07) << 8) | (bytes[7] ?? 0) // random start, headroom left for increments
  }
  bytes[0] = Math.floor(ms / 2 ** 40) & 0xff
  bytes[1] = Math.floor(ms / 2 ** 32) & 0xff
  bytes[2] = (ms >>> 24) & 0xff
  bytes[3] = (ms >>> 16) & 0xff
  bytes[4] = (ms >>> 8) & 0xff
  bytes[5] = ms & 0xff
  bytes[6] = 0x70 | ((counter >>> 8) & 0x0f)
  bytes[7] = counter & 0xff
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80
  return bytes
}

/**
 * 128 bits → 26 base32 characters (the first carries the top 3 bits, so it is at most `7`): the 16 bytes read as
 * one big-endian number behind two zero bits, five bits a character. Plain integer arithmetic (at most 12 bits are
 * held between characters), not a `BigInt`, which allocates for every step; ids are made on every write.
 */
export const encodeBase32 = (bytes: Uint8Array): string => {
  let out = ""
  let held = 0
  let heldBits = 2 // 26 × 5 = 130 bits: two leading zero bits
  for (const byte of bytes) {
    held = (held << 8) | byte
    heldBits += 8
    while (heldBits >= 5) {
      heldBits -= 5
      out += ALPHABET.charAt((held >>> heldBits) & 31)
    }
    held &= (1 << heldBits) - 1
  }
  return out
}

export const prefixes = {
  project: "proj",
  user: "usr",
  org: "org",
  team: "team",
  apiKey: "key",
  webhook: "whk",
  event: "evt",
  delivery: "dlv",
  client: "cli",
  deployment: "dpl",
  invitation: "inv",
  grant: "grant",
  session: "ses",
  audit: "aud"
} as const

export type IdKind = keyof typeof prefixes

export const makeId = <K extends IdKind>(kind: K): `${(typeof prefixes)[K]}_${string}` =>
  `${prefixes[kind]}_${encodeBase32(uuidv7Bytes())}`

/** What an id of `kind` looks like (the schemas below check it; code given an id as plain text may test it). */
export const idPattern = (kind: IdKind): RegExp => new RegExp(`^${prefixes[kind]}_[0-7][${ALPHABET}]{25}$`)

const idAnnotations = (kind: IdKind) => ({
  title: `${kind} id`,
  description: `\`${prefixes[kind]}_\` followed by 26 Crockford base32 characters`,
  examples: [`${prefixes[kind]}_01jd3xkq8w0000000000000000`] as const
})

const idSchema = <K extends IdKind>(kind: K) =>
  Schema.String.pipe(
    Schema.pattern(idPattern(kind)),
    Schema.annotations({ ...idAnnotations(kind), message: () => `must be a ${prefixes[kind]}_ identifier` })
  )

/**
 * The same id as the service's own records carry it, in a row read back and in a response: documented with its
 * pattern, but not matched again. It was matched on its way in (`ProjectId` and the others, below) or made by
 * `makeId`, and matching every id of every row is much of what decoding and encoding a list page costs.
 */
const storedId = (kind: IdKind) =>
  Schema.String.annotations({ ...idAnnotations(kind), jsonSchema: { pattern: idPattern(kind).source } })

/**
 * Ids that travel side by side (a webhook's and its delivery's, a project's and its team's) are branded, so
 * one cannot be passed for the other. User, organisation and team ids stay plain strings for now: the principal
 * is also built from the OAuth tables, and teams from their own, which are not decoded yet.
 */
const brandedId = <K extends IdKind, const B extends string>(kind: K, brand: B) =>
  idSchema(kind).pipe(Schema.brand(brand))

export const ProjectId = brandedId("project", "ProjectId")
export type ProjectId = typeof ProjectId.Type
export const UserId = idSchema("user")
export const OrgId = idSchema("org")
export const TeamId = idSchema("team")
export const SessionId = idSchema("session")
export const ApiKeyId = brandedId("apiKey", "ApiKeyId")
export type ApiKeyId = typeof ApiKeyId.Type
export const WebhookId = brandedId("webhook", "WebhookId")
export type WebhookId = typeof WebhookId.Type
export const EventId = brandedId("event", "EventId")
export type EventId = typeof EventId.Type
export const DeliveryId = brandedId("delivery", "DeliveryId")
export type DeliveryId = typeof DeliveryId.Type
export const InvitationId = brandedId("invitation", "InvitationId")
export type InvitationId = typeof InvitationId.Type
export const DeploymentId = brandedId("deployment", "DeploymentId")
export type DeploymentId = typeof DeploymentId.Type
export const OAuthClientId = brandedId("client", "OAuthClientId")
export type OAuthClientId = typeof OAuthClientId.Type
export const GrantId = brandedId("grant", "GrantId")
export type GrantId = typeof GrantId.Type
export const AuditId = brandedId("audit", "AuditId")
export type AuditId = typeof AuditId.Type

/**
 * The ids of records the service wrote (rows, responses): each branded as its checked twin above is, its pattern
 * documented only.
 */
export const Stored = {
  ProjectId: storedId("project").pipe(Schema.brand("ProjectId")),
  UserId: storedId("user"),
  OrgId: storedId("org"),
  TeamId: storedId("team"),
  ApiKeyId: storedId("apiKey").pipe(Schema.brand("ApiKeyId")),
  WebhookId: storedId("webhook").pipe(Schema.brand("WebhookId")),
  EventId: storedId("event").pipe(Schema.brand("EventId")),
  DeliveryId: storedId("delivery").pipe(Schema.brand("DeliveryId")),
  InvitationId: storedId("invitation").pipe(Schema.brand("InvitationId")),
  DeploymentId: storedId("deployment").pipe(Schema.brand("DeploymentId")),
  OAuthClientId: storedId("client").pipe(Schema.brand("OAuthClientId")),
  GrantId: storedId("grant").pipe(Schema.brand("GrantId")),
  SessionId: storedId("session"),
  AuditId: storedId("audit").pipe(Schema.brand("AuditId"))
} as const

/** Random base62 text from a CSPRNG, without modulo bias. */
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
export const randomBase62 = (length: number): string => {
  let out = ""
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < 248 && out.length < length) out += BASE62[b % 62]
    }
  }
  return out
}
