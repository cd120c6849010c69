/**
 * OAuth clients: registration (operators, through the CLI), lookup, and client authentication at the token and
 * revocation endpoints. Secrets are shown once, at registration, and kept as SHA-256.
 */
import { Effect, Option, Schema } from "effect"
import { NotFound, ValidationFailed } from "../Domain/Errors.js"
import { makeId } from "../Domain/Ids.js"
import { OAuthClient, OAuthError } from "../Domain/OAuth.js"
import { TrimmedName } from "../Domain/Payload.js"
import { sameHash, sha256Hex } from "../Domain/Secrets.js"
import { nowIso } from "../Domain/Time.js"
import { traced } from "../Observability/Traced.js"
import { OAuthRepo } from "./Repo.js"
import { newClientSecret } from "./Secrets.js"

export interface NewClient {
  readonly name: string
  readonly redirectUris: ReadonlyArray<string>
  readonly isPublic: boolean
}

/** A registration as the operator sees it, once: the secret (confidential clients) is not shown again. */
export interface RegisteredClient {
  readonly client_id: string
  readonly client_secret?: string
  readonly name: string
  readonly redirect_uris: ReadonlyArray<string>
  readonly public: boolean
}

/** A client's credentials as presented (by HTTP Basic or in the body): its id, and its secret if one was sent. */
export interface ClientCredentials {
  readonly id: string
  readonly secret: Option.Option<string>
}

export class OAuthClients extends Effect.Service<OAuthClients>()("OAuthClients", {
  dependencies: [OAuthRepo.Default],
  effect: Effect.gen(function* () {
    const repo = yield* OAuthRepo

    const find = traced("OAuthClients.find")(function* (id: string) {
      return yield* Effect.orDie(repo.findClient(id))
    })

    /** `bun run cli oauth-clients create`. */
    const create = traced("OAuthClients.create")(function* (input: NewClient) {
      const name = yield* Schema.decodeUnknown(TrimmedName)(input.name).pipe(
        Effect.mapError(() => ValidationFailed.field("name", "must be 1 to 100 characters"))
      )
      if (input.redirectUris.length === 0)
        return yield* ValidationFailed.field("redirect-uri", "at least one is required")
      for (const uri of input.redirectUris) {
        if (!URL.canParse(uri) || uri.includes("#")) {
          return yield* ValidationFailed.field("redirect-uri", `must be an absolute URL without a fragment: ${uri}`)
        }
      }
      const redirectUris = Array.from(new Set(input.redirectUris))
      const secret = input.isPublic ? Option.none() : Option.some(newClientSecret())
      const client = new OAuthClient({
        id: makeId("client"),
        name,
        secretHash: Option.getOrNull(Option.map(secret, sha256Hex)),
        redirectUris,
        isPublic: input.isPublic
      })
      yield* Effect.orDie(repo.insertClient({ client, createdAt: nowIso() }))
      const registered: RegisteredClient = {
        client_id: client.id,
        ...Option.match(secret, { onNone: () => ({}), onSome: (value) => ({ client_secret: value }) }),
        name,
        redirect_uris: redirectUris,
        public: input.isPublic
      }
      return registered
    })

    /**
     * Client authentication (client_secret_basic, client_secret_post, or none for a public client). Every failure
     * is the same `invalid_client`, whether the client is unknown or the secret wrong.
     */
    const authenticate = traced("OAuthClients.authenticate")(function* (credentials: ClientCredentials) {
      const invalidClient = OAuthError.of("invalid_client", "Client authentication failed")
      const found = yield* find(credentials.id)
      if (Option.isNone(found)) return yield* invalidClient
      const client = found.value
      if (client.isPublic) {
        // A public client has no secret: sending one means the client is misconfigured.
        if (Option.isSome(credentials.secret) && credentials.secret.value !== "") return yield* invalidClient
        return client
      }
      if (Option.isNone(credentials.secret) || client.secretHash === null) return yield* invalidClient
      if (!sameHash(sha256Hex(credentials.secret.value), client.secretHash)) return yield* invalidClient
      return client
    })

    /** `cli oauth-clients list`: every client, oldest first, never a secret. */
    const listAll = traced("OAuthClients.listAll")(function* () {
      return yield* Effect.orDie(repo.listClients())
    })

    /** `cli oauth-clients delete`: the client goes with its pending authorizations, codes and tokens. */
    const remove = traced("OAuthClients.remove")(function* (id: string) {
      if (!(yield* Effect.orDie(repo.deleteClient(id)))) return yield* NotFound.resource("OAuth client", id)
      return { client_id: id, deleted: true } as const
    })

    /** `cli oauth-clients rotate-secret`: a new secret, shown this once; the old one stops working at once. */
    const rotateSecret = traced("OAuthClients.rotateSecret")(function* (id: string) {
      const found = yield* Effect.orDie(repo.findClientSummary(id))
      if (Option.isNone(found)) return yield* NotFound.resource("OAuth client", id)
      if (found.value.public) return yield* ValidationFailed.field("client", "is public: it has no secret to rotate")
      const secret = newClientSecret()
      yield* Effect.orDie(repo.setClientSecret({ id, secretHash: sha256Hex(secret) }))
      return { ...found.value, client_secret: secret }
    })

    return { find, create, authenticate, listAll, remove, rotateSecret } as const
  })
}) {}
