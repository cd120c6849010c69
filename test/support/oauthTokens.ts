/**
 * OAuth access and refresh tokens of a user's for a confidential client, made through the services' own flow
 * (authorize, sign in, consent, exchange the code) on a harness over the server's database, without the pages: for
 * tests that need a third-party credential, not the flow itself (test/e2e/oauth.test.ts tests the flow).
 */
import { Effect, Layer, Option } from "effect"
import { OAuthAuthorizations } from "../../src/OAuth/Authorizations.ts"
import { OAuthClients } from "../../src/OAuth/Clients.ts"
import { OAuthTokens } from "../../src/OAuth/Tokens.ts"
import type { ServiceHarness } from "./services.ts"

/** The services the flow runs on: `onDatabase(oauthLayers, server.databaseUrl)`. */
export const oauthLayers = Layer.mergeAll(OAuthClients.Default, OAuthAuthorizations.Default, OAuthTokens.Default)
export type OAuthHarness = ServiceHarness<Layer.Layer.Success<typeof oauthLayers>>

/** A confidential client that redirects to `redirectUri`: its id and secret. */
export const confidentialClient = (harness: OAuthHarness, name: string, redirectUri: string) =>
  harness.run(
    Effect.map(
      Effect.flatMap(OAuthClients, (clients) => clients.create({ name, redirectUris: [redirectUri], isPublic: false })),
      (client) => ({ id: client.client_id, secret: client.client_secret ?? "" })
    )
  )

/**
 * `userId` approves `client` for `scope` (`read write` unless given), then the client, authenticated with its
 * secret, exchanges the code: its tokens. An effect on the OAuth services, for a harness that has them.
 */
export const approvedTokens = (
  client: { readonly id: string; readonly secret: string },
  redirectUri: string,
  userId: string,
  scope: ReadonlyArray<string> = ["read", "write"]
) =>
  Effect.gen(function* () {
    const authorizations = yield* OAuthAuthorizations
    const started = yield* authorizations.start({
      clientId: Option.some(client.id),
      redirectUri: Option.some(redirectUri),
      responseType: Option.some("code"),
      scope,
      state: Option.some("st"),
      codeChallenge: Option.none(),
      codeChallengeMethod: Option.none()
    })
    const csrf = yield* authorizations.signedIn(started.pending.id, userId)
    const decided = Option.getOrThrow(yield* authorizations.decide({ pending: started.pending.id, csrf }, true))
    if (decided.outcome._tag !== "Approved") throw new Error("not approved")
    const authenticated = yield* (yield* OAuthClients).authenticate({
      id: client.id,
      secret: Option.some(client.secret)
    })
    return yield* (yield* OAuthTokens).exchangeCode(authenticated, {
      code: decided.outcome.code,
      redirectUri,
      codeVerifier: Option.none()
    })
  })

/** The tokens `userId` gets by approving `client` for `read write`, on `harness`. */
export const oauthTokensOf = (
  harness: OAuthHarness,
  client: { readonly id: string; readonly secret: string },
  redirectUri: string,
  userId: string
) => harness.run(approvedTokens(client, redirectUri, userId))
