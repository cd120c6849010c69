/**
 * The published OpenAPI document: the one generated from the `HttpApi`, completed for client generators.
 *
 * - `page` and `per_page` are typed integers (they travel as query strings, and are decoded from text, so the
 *   generated schema says `string`; a typed client should send numbers).
 * - `servers` names this server (`BASE_URL`, else the scheme and host the client used, as for the OAuth issuer).
 * - Beside `bearer`, an OAuth 2.0 authorization-code scheme with its URLs and scopes; each endpoint accepts either,
 *   the OAuth one with the scopes it needs (any one of them; `/v1/api-keys` takes no OAuth token).
 * - The authorization server's routes (`/oauth/token`, `/oauth/revoke`, `/oauth/introspect`, `/oauth/login`,
 *   `/oauth/logout`, `/oauth/authorize`, `/oauth/jwks.json`, the RFC 8414 metadata) and the RFC 9728
 *   protected-resource metadata are described here; they are served by `src/OAuth/Http.ts`, outside
 *   the `HttpApi`, because they answer in RFC 6749 forms, not in the `/v1` envelope. Their bodies' schemas are
 *   derived from the ones those handlers decode and answer with (src/OAuth/Wire.ts). The browser-only form posts
 *   behind the sign-in and consent pages are left out.
 * - Header parameters are named as HTTP writes them (`Idempotency-Key`; the contract declares them in lower case,
 *   as the server receives them). Only the operations that declare `Idempotency-Key` (every `POST`) keep the two
 *   errors that come with it (declared API-wide in src/Api.ts so the server encodes them; src/Idempotency/Http.ts
 *   answers them).
 * - Conditional requests (src/Http/ApiMiddleware.ts): a `GET` of one record declares `If-None-Match` and `If-Match`,
 *   its `ETag` and `304`; a `PUT` or `DELETE` declares `If-Match`; those, and only those, answer `412` (declared
 *   API-wide in src/Api.ts). A `PUT` of a record that has a `GET` declares the `ETag` of its answer.
 * - Every operation declares `400 validation_failed`: an unknown query parameter is refused on every one.
 */
import * as OpenApi from "@effect/platform/OpenApi"
import type * as JsonSchema from "@effect/platform/OpenApiJsonSchema"
import { Context, Option, Schema } from "effect"
import * as JSONSchema from "effect/JSONSchema"
import * as AST from "effect/SchemaAST"
import { Api } from "../Api.js"
import { RequiredScopes } from "../Contract/Security.js"
import type { scopeNames } from "../Domain/Scopes.js"
import { oauthWireSchemas } from "../OAuth/Wire.js"
import { headerName } from "./ErrorTranslation.js"

/** What the document needs to know about where it is served. */
export interface Served {
  /** `https://api.example.com`: the paths (`/v1/…`, `/oauth/…`) follow it. */
  readonly baseUrl: string
  /** `{baseUrl}/oauth`. */
  readonly authUrl: string
}

const scopeDescriptions: Record<(typeof scopeNames)[number], string> = {
  read: "read everything the user can read",
  write: "change everything the user can change",
  "projects:read": "read projects",
  "projects:write": "create, change and delete projects",
  "team:manage": "manage teams and their members",
  "billing:read": "read billing information"
}

/** Query parameters that are integers on the wire, though decoded from text. */
const integerQuery: Record<string, { readonly minimum: number; readonly maximum?: number; readonly default: number }> =
  {
    page: { minimum: 1, default: 1 },
    per_page: { minimum: 1, maximum: 100, default: 20 }
  }

/** `/v1/projects/:id` → `/v1/projects/{id}`, with the scopes the endpoint asks for. */
const endpointScopes: ReadonlyMap<string, ReadonlyArray<string>> = new Map(
  Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map(
      (endpoint) =>
        [
          `${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`,
          Option.getOrElse(Context.getOption(endpoint.annotations, RequiredScopes), () => [])
        ] as const
    )
  )
)

/** OAuth tokens manage no API keys (see `ApiKeys.create`/`list`/`revoke`). */
const acceptsOAuth = (path: string) => !path.startsWith("/v1/api-keys")

const securityFor = (method: string, path: string): Array<Record<string, Array<string>>> => {
  if (!acceptsOAuth(path)) return [{ bearer: [] }]
  const scopes = endpointScopes.get(`${method} ${path}`) ?? []
  // OpenAPI lists the scopes a requirement needs all of; ours need any one, so one requirement each.
  return [{ bearer: [] }, ...(scopes.length === 0 ? [{ oauth2: [] }] : scopes.map((scope) => ({ oauth2: [scope] })))]
}

/**
 * The first example of a list's date filters, as `/docs` fills every query parameter of its request example with
 * one: a window that keeps every record, so the example run as shown lists what the caller has (a one-day window
 * would list nothing). The other examples show the accepted forms.
 */
const filterExamples: Record<string, ReadonlyArray<string>> = {
  created_after: ["2000-01-01", "2026-01-31T12:00:00Z", "2026-01-31T14:00:00+02:00"],
  created_before: ["2100-01-01", "2026-01-31T12:00:00Z", "2026-01-31T14:00:00+02:00"]
}

const methods: ReadonlyArray<OpenApi.OpenAPISpecMethodName> = [
  "get",
  "put",
  "post",
  "delete",
  "options",
  "head",
  "patch",
  "trace"
]

/** The error schemas only an operation that declares `Idempotency-Key` is answered with. */
const idempotencyErrors: ReadonlySet<string> = new Set([
  "#/components/schemas/IdempotencyKeyInUseError",
  "#/components/schemas/IdempotencyKeyReusedError"
])

const IDEMPOTENCY_KEY = "Idempotency-Key"
const PRECONDITION_FAILED = "#/components/schemas/PreconditionFailedError"
const VALIDATION_FAILED = "#/components/schemas/ValidationFailedError"

/** Whether a success schema's `data` is one record (`Success(…)`), not a list of them (`List(…)`). */
const isOneRecord = (success: Schema.Schema.All): boolean => {
  const data = AST.getPropertySignatures(AST.encodedAST(success.ast)).find(({ name }) => name === "data")
  return data !== undefined && AST.encodedAST(data.type)._tag === "TypeLiteral"
}

/** The paths (`/v1/projects/{id}`) whose `GET` answers one record: those answers, and their `PUT`'s, have an `ETag`. */
const taggedPaths: ReadonlySet<string> = new Set(
  Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).flatMap((endpoint) =>
      endpoint.method === "GET" && Schema.isSchema(endpoint.successSchema) && isOneRecord(endpoint.successSchema)
        ? [endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")]
        : []
    )
  )
)

const etagHeader = {
  ETag: {
    description: "The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match`",
    schema: { type: "string" }
  }
}

const ifNoneMatchParameter: OpenApi.OpenAPISpecParameter = {
  name: "If-None-Match",
  in: "header",
  required: false,
  schema: { type: "string" },
  description: "One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body."
}

const ifMatchParameter: OpenApi.OpenAPISpecParameter = {
  name: "If-Match",
  in: "header",
  required: false,
  schema: { type: "string" },
  description:
    "One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` " +
    "and nothing changes. Of concurrent requests carrying the same tag, one succeeds."
}

/** A response with its `ETag` header (the platform's response type has no `headers`; the document does). */
const withEtag = (response: OpenApi.OpenApiSpecResponse): OpenApi.OpenApiSpecResponse => {
  const withHeaders: OpenApi.OpenApiSpecResponse & { readonly headers: typeof etagHeader } = {
    ...response,
    headers: etagHeader
  }
  return withHeaders
}

/** The conditional parts of an operation: its parameters, and what its responses gain. */
const conditionalOf = (method: OpenApi.OpenAPISpecMethodName, path: string) => {
  const tagged = taggedPaths.has(path)
  const read = method === "get" && tagged
  const write = method === "put" || method === "delete"
  return {
    parameters: read ? [ifNoneMatchParameter, ifMatchParameter] : write ? [ifMatchParameter] : [],
    preconditions: read || write,
    etag: read || (method === "put" && tagged),
    notModified: read
  }
}

const withConditionalResponses = (
  responses: OpenApi.OpenAPISpecResponses,
  conditional: ReturnType<typeof conditionalOf>
): OpenApi.OpenAPISpecResponses => {
  const out: OpenApi.OpenAPISpecResponses = { ...responses }
  const ok = out[200]
  if (conditional.etag && ok !== undefined) out[200] = withEtag(ok)
  if (conditional.notModified) {
    out[304] = withEtag({
      description: "Not modified: the record still has an `ETag` named in `If-None-Match`; no body"
    })
  }
  if (out[400] === undefined) {
    out[400] = {
      description: "An unknown query parameter (`details` names it)",
      content: { "application/json": { schema: { $ref: VALIDATION_FAILED } } }
    }
  }
  return out
}

/** The `$ref`s a response schema is made of (one, or a union of them), or undefined for any other schema. */
const refsOf = (schema: JsonSchema.JsonSchema): ReadonlyArray<string> | undefined => {
  if ("$ref" in schema) return [schema.$ref]
  if (!("anyOf" in schema)) return undefined
  const refs = schema.anyOf.flatMap((member) => ("$ref" in member ? [member.$ref] : []))
  return refs.length === schema.anyOf.length ? refs : undefined
}

/** A response header (OpenAPI 3.1 §4.8.21), which the platform's response type does not model. */
interface ResponseHeader {
  readonly description: string
  readonly schema: { readonly type: "string" }
}
type ResponseWithHeaders = OpenApi.OpenApiSpecResponse & { readonly headers?: Record<string, ResponseHeader> }

/** The `WWW-Authenticate` of a `/v1` 401 and 403 (src/Http/Authentication.ts writes them). */
const bearerChallenges: Record<number, Record<string, ResponseHeader>> = {
  401: {
    "WWW-Authenticate": {
      description:
        '`Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-' +
        'resource/v1"` (no `error` when no credential was sent)',
      schema: { type: "string" }
    }
  },
  403: {
    "WWW-Authenticate": {
      description:
        'When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of ' +
        'these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure',
      schema: { type: "string" }
    }
  }
}

/**
 * An operation's responses with the `Idempotency-Key` errors kept where the operation declares the header and
 * taken out of any other (a status left with nothing goes). A status several errors share is described by each
 * of them.
 */
const responsesFor = (
  keyed: boolean,
  responses: OpenApi.OpenAPISpecResponses,
  schemas: Readonly<Record<string, JsonSchema.JsonSchema>>,
  preconditions: boolean
): OpenApi.OpenAPISpecResponses => {
  const dropped = (ref: string) =>
    (!keyed && idempotencyErrors.has(ref)) || (!preconditions && ref === PRECONDITION_FAILED)
  const describe = (ref: string) => {
    const schema = schemas[ref.slice("#/components/schemas/".length)]
    return schema !== undefined && "description" in schema && schema.description !== undefined
      ? schema.description
      : ref
  }
  const out: OpenApi.OpenAPISpecResponses = {}
  for (const [status, given] of Object.entries(responses)) {
    const challenge = bearerChallenges[Number(status)]
    const response: ResponseWithHeaders = challenge === undefined ? given : { ...given, headers: challenge }
    const media = response.content?.["application/json"]
    const refs = media === undefined ? undefined : refsOf(media.schema)
    if (refs === undefined || !refs.some(dropped)) {
      out[Number(status)] = response
      continue
    }
    const kept = refs.filter((ref) => !dropped(ref))
    const [only] = kept
    if (only === undefined) continue
    out[Number(status)] = {
      ...response,
      description: kept.map(describe).join("; or: "),
      content: {
        ...response.content,
        "application/json": {
          schema: kept.length === 1 ? { $ref: only } : { anyOf: kept.map(($ref) => ({ $ref })) }
        }
      }
    }
  }
  return out
}

const completePaths = (
  paths: OpenApi.OpenAPISpecPaths,
  schemas: Readonly<Record<string, JsonSchema.JsonSchema>>
): OpenApi.OpenAPISpecPaths =>
  Object.fromEntries(
    Object.entries(paths).map(([path, item]) => {
      const completed: OpenApi.OpenAPISpecPathItem = {}
      for (const method of methods) {
        const operation = item[method]
        if (operation === undefined) continue
        const parameters = operation.parameters.map((parameter): OpenApi.OpenAPISpecParameter => {
          if (parameter.in === "header") return { ...parameter, name: headerName(parameter.name) }
          const integer = parameter.in === "query" ? integerQuery[parameter.name] : undefined
          const examples = parameter.in === "query" ? filterExamples[parameter.name] : undefined
          if (examples !== undefined) return { ...parameter, schema: { ...parameter.schema, examples: [...examples] } }
          return integer === undefined
            ? parameter
            : {
                ...parameter,
                schema: {
                  type: "integer",
                  ...integer,
                  ...(parameter.description === undefined ? {} : { description: parameter.description })
                }
              }
        })
        const isList = method === "get" && parameters.some((parameter) => parameter.name === "page")
        const conditional = conditionalOf(method, path)
        const responses = Object.fromEntries(
          Object.entries(
            withConditionalResponses(
              responsesFor(
                parameters.some((parameter) => parameter.in === "header" && parameter.name === IDEMPOTENCY_KEY),
                operation.responses,
                schemas,
                conditional.preconditions
              ),
              conditional
            )
          ).map(([status, response]: [string, ResponseWithHeaders]) => [
            status,
            { ...response, headers: { ...headersFor(method, status, isList), ...response.headers } }
          ])
        )
        completed[method] = {
          ...operation,
          description: operation.description ?? describeAccess(method, path),
          security: securityFor(method, path),
          parameters: [...parameters, ...conditional.parameters],
          responses
        }
      }
      return [path, completed]
    })
  )

/** Response headers, declared once and referenced from each response that carries them. */
const responseHeaders = {
  "X-Request-Id": {
    description: "The request's id (`req_…`, or the caller's own `X-Request-Id` when valid): quote it when reporting",
    schema: { type: "string" }
  },
  "X-RateLimit-Limit": {
    description: "Requests the bucket this request was counted against allows per window",
    schema: { type: "integer" }
  },
  "X-RateLimit-Remaining": { description: "Requests left in that bucket", schema: { type: "integer" } },
  "X-RateLimit-Reset": {
    description: "When that bucket is full again (Unix time, seconds)",
    schema: { type: "integer" }
  },
  Link: {
    description: "RFC 8288 links to the `first`, `prev`, `next` and `last` pages (as GitHub sends them)",
    schema: { type: "string" }
  },
  "Idempotent-Replayed": {
    description: "`true` when this is the recorded answer to an earlier request with the same `Idempotency-Key`",
    schema: { type: "string", enum: ["true"] }
  },
  "Retry-After": { description: "Seconds to wait before trying again", schema: { type: "integer", minimum: 1 } }
}
const headerRef = (name: keyof typeof responseHeaders) => ({ $ref: `#/components/headers/${name}` })

/**
 * The headers a `/v1` response carries (src/Http/RequestWrapper.ts, src/Http/Authentication.ts, src/Contract/Links.ts,
 * src/Idempotency/Http.ts): the request id and the rate limit on all, `Link` on a list page, `Idempotent-Replayed`
 * on a `POST`'s success, `Retry-After` on 429, 503 and (a `POST`'s) 409.
 */
const headersFor = (method: string, status: string, isList: boolean) => {
  const success = status.startsWith("2")
  return {
    "X-Request-Id": headerRef("X-Request-Id"),
    "X-RateLimit-Limit": headerRef("X-RateLimit-Limit"),
    "X-RateLimit-Remaining": headerRef("X-RateLimit-Remaining"),
    "X-RateLimit-Reset": headerRef("X-RateLimit-Reset"),
    ...(success && isList ? { Link: headerRef("Link") } : {}),
    ...(success && method === "post" ? { "Idempotent-Replayed": headerRef("Idempotent-Replayed") } : {}),
    ...(status === "429" || status === "503" || (status === "409" && method === "post")
      ? { "Retry-After": headerRef("Retry-After") }
      : {})
  }
}

/**
 * What every operation is told beside its summary, when its endpoint gives no description of its own: who may call
 * it. Made here so an endpoint added later has one too.
 */
const describeAccess = (method: string, path: string): string => {
  const scopes = endpointScopes.get(`${method} ${path}`) ?? []
  if (!acceptsOAuth(path)) return "Needs an API key or a session token (OAuth access tokens manage no API keys)."
  if (scopes.length === 0) return "Needs a credential."
  const all: ReadonlyArray<string> = Object.keys(scopeDescriptions)
  if (all.every((scope) => scopes.includes(scope))) return "Any valid credential may call it, whatever its scopes."
  return `Needs a credential with ${scopes.length === 1 ? "the scope" : "any one of the scopes"} ${scopes
    .map((scope) => `\`${scope}\``)
    .join(", ")}.`
}

/**
 * What Effect's JSON Schema generator leaves behind that means nothing to a reader or a client generator: `$id`s
 * such as `/schemas/%7B%7D` or `/schemas/unknown`, and titles named after a filter or a primitive (`maxLength(200)`,
 * `minItems(1)`, `int`, `unknown`). Titles that name something (`Timestamp`, `webhook id`) stay.
 */
const removeGeneratorLeftovers = (node: unknown): void => {
  if (Array.isArray(node)) {
    for (const item of node) removeGeneratorLeftovers(item)
    return
  }
  if (node === null || typeof node !== "object") return
  for (const [key, value] of Object.entries(node)) {
    const leftover =
      (key === "$id" && typeof value === "string" && value.startsWith("/schemas/")) ||
      (key === "title" && typeof value === "string" && /^[a-z][A-Za-z]*(\(.*\))?$/.test(value))
    if (leftover) Reflect.deleteProperty(node, key)
    else removeGeneratorLeftovers(value)
  }
}

/** The component schemas some `$ref` in `document` still points at (transitively): the others are dropped. */
const usedSchemas = <S>(schemas: Readonly<Record<string, S>>, rest: unknown): Record<string, S> => {
  const refsIn = (node: unknown, into: Set<string>): void => {
    if (Array.isArray(node)) for (const item of node) refsIn(item, into)
    else if (node !== null && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "$ref" && typeof value === "string" && value.startsWith("#/components/schemas/")) {
          into.add(value.slice("#/components/schemas/".length))
        } else refsIn(value, into)
      }
    }
  }
  const used = new Set<string>()
  refsIn(rest, used)
  const queue = [...used]
  for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
    const found = new Set<string>()
    refsIn(schemas[name], found)
    for (const next of found) {
      if (used.has(next)) continue
      used.add(next)
      queue.push(next)
    }
  }
  return Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)))
}

const json = (schema: unknown) => ({ "application/json": { schema } })
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const oauthErrorResponse = (description: string) => ({ description, content: json(ref("OAuthError")) })
const retryAfter = { "Retry-After": { description: "seconds to wait", schema: { type: "integer" } } }
const rateLimitedResponse = {
  description:
    "`temporarily_unavailable`: too many requests from this address (or failed sign-ins for this account); see " +
    "`Retry-After`",
  headers: retryAfter,
  content: json(ref("OAuthError"))
}
const clientLimitedResponse = {
  description:
    "`temporarily_unavailable`: over this client's limit (`OAUTH_CLIENT_LIMIT_PER_MINUTE`), or too many failed " +
    "client authentications from this address; see `Retry-After`",
  headers: retryAfter,
  content: json(ref("OAuthError"))
}
/** RFC 6749 bodies: form-encoded (as the RFC says) or a JSON object of strings. */
const formOrJson = (schema: unknown) => ({
  required: true,
  content: { "application/x-www-form-urlencoded": { schema }, "application/json": { schema } }
})
const tags = ["OAuth"]

/**
 * The authorization server's bodies, derived from the schemas its handlers decode and answer with
 * (src/OAuth/Wire.ts). They take parameters they do not name (RFC 6749 §3.1, 3.2), so no `additionalProperties: false`.
 */
const oauthSchemas = () => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const derived = Object.fromEntries(
    Object.entries(oauthWireSchemas).map(([name, schema]) => [
      name,
      JSONSchema.fromAST(schema.ast, {
        definitions,
        definitionPath: "#/components/schemas/",
        target: "openApi3.1",
        topLevelReferenceStrategy: "skip",
        additionalPropertiesStrategy: "allow"
      })
    ])
  )
  return { ...definitions, ...derived }
}

const metadataOperation = (operationId: string) => ({
  get: {
    operationId,
    tags,
    summary: "Authorization server metadata (RFC 8414)",
    description:
      "The issuer, its endpoints, and the scopes, grant types and PKCE methods it supports; needs no credential.",
    security: [],
    responses: { 200: { description: "The metadata", content: json(ref("AuthorizationServerMetadata")) } }
  }
})

const resourceMetadataOperation = (operationId: string) => ({
  get: {
    operationId,
    tags,
    summary: "Protected-resource metadata of `{base_url}/v1` (RFC 9728)",
    description:
      "What an OAuth client reads first (RFC 9728): the resource, its authorization server, the scopes and how a " +
      "token is sent. A `/v1` 401 names this document in `WWW-Authenticate` (`resource_metadata`). No credential.",
    security: [],
    responses: { 200: { description: "The metadata", content: json(ref("ProtectedResourceMetadata")) } }
  }
})

const oauthPaths = {
  "/oauth/authorize": {
    get: {
      operationId: "oauth.authorize",
      tags,
      summary: "Start an authorization (a browser page: sign-in, then consent)",
      description:
        "Open in the user's browser. Afterwards the browser is sent to `redirect_uri` with `code`, " +
        "`state` and `iss`, or `error=access_denied`. An unknown client or unregistered `redirect_uri` gets an " +
        "HTML error page instead of a redirect.",
      security: [],
      parameters: [
        { name: "response_type", in: "query", required: true, schema: { type: "string", const: "code" } },
        { name: "client_id", in: "query", required: true, schema: { type: "string" } },
        { name: "redirect_uri", in: "query", required: true, schema: { type: "string", format: "uri" } },
        {
          name: "scope",
          in: "query",
          required: true,
          description: "space-separated scope names",
          schema: { type: "string" }
        },
        { name: "state", in: "query", required: false, schema: { type: "string" } },
        {
          name: "code_challenge",
          in: "query",
          required: false,
          description: "PKCE; required for public clients",
          schema: { type: "string" }
        },
        { name: "code_challenge_method", in: "query", required: false, schema: { type: "string", const: "S256" } }
      ],
      responses: {
        200: { description: "The sign-in page", content: { "text/html": { schema: { type: "string" } } } },
        302: { description: "Back to the client with an error (`invalid_scope`, …)" },
        400: {
          description: "An HTML error page (unknown client, unregistered redirect URI)",
          content: { "text/html": { schema: { type: "string" } } }
        }
      }
    }
  },
  "/oauth/token": {
    post: {
      operationId: "oauth.token",
      tags,
      summary: "Exchange an authorization code, or a refresh token, for tokens",
      description:
        "A confidential client authenticates with HTTP Basic or `client_id` and `client_secret` in the body; a " +
        "public client sends its `client_id` and the PKCE `code_verifier`. Each refresh returns a new refresh token.",
      security: [{}, { oauthClientBasic: [] }],
      requestBody: formOrJson(ref("TokenRequest")),
      responses: {
        200: {
          description: "Tokens (`Cache-Control: no-store`)",
          content: json(ref("OAuthTokens"))
        },
        400: oauthErrorResponse("`invalid_request`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope`"),
        401: oauthErrorResponse("`invalid_client`"),
        429: clientLimitedResponse
      }
    }
  },
  "/oauth/revoke": {
    post: {
      operationId: "oauth.revoke",
      tags,
      summary: "Revoke an access or refresh token (RFC 7009)",
      description: "A refresh token takes its grant's access tokens with it. An unknown token is not an error.",
      security: [{}, { oauthClientBasic: [] }],
      requestBody: formOrJson(ref("RevokeRequest")),
      responses: {
        200: { description: "Revoked (or unknown)", content: json({ type: "object" }) },
        400: oauthErrorResponse("`invalid_request`"),
        401: oauthErrorResponse("`invalid_client`"),
        429: clientLimitedResponse
      }
    }
  },
  "/oauth/introspect": {
    post: {
      operationId: "oauth.introspect",
      tags,
      summary: "Introspect an access or refresh token (RFC 7662), as a confidential client",
      description:
        "For resource servers holding a confidential client's credentials: the answer says whether the token is " +
        "one of that client's own live tokens. Not open to browsers (no CORS).",
      security: [{}, { oauthClientBasic: [] }],
      requestBody: formOrJson(ref("IntrospectionRequest")),
      responses: {
        200: { description: "The token's state (`Cache-Control: no-store`)", content: json(ref("Introspection")) },
        400: oauthErrorResponse("`invalid_request`"),
        401: oauthErrorResponse("`invalid_client`: a public client, no client, or a wrong secret"),
        429: clientLimitedResponse
      }
    }
  },
  "/oauth/login": {
    post: {
      operationId: "oauth.login",
      tags,
      summary: "Sign in with email and password for a session JWT",
      description:
        "For the dashboard and scripts acting as a person: the JWT (EdDSA, one hour) works as a bearer token on " +
        "every `/v1` endpoint. Repeated failures for an address or an account are answered 429.",
      security: [],
      requestBody: { required: true, content: json(ref("LoginRequest")) },
      responses: {
        200: { description: "A session JWT (one hour)", content: json(ref("SessionToken")) },
        400: oauthErrorResponse("`invalid_request`"),
        401: oauthErrorResponse("`invalid_grant`: the email or password is wrong"),
        429: rateLimitedResponse
      }
    }
  },
  "/oauth/logout": {
    post: {
      operationId: "oauth.logout",
      tags,
      summary: "End the session whose JWT is the bearer token",
      description:
        "The session JWT from `/oauth/login` as `Authorization: Bearer`: its session ends, and the JWT answers " +
        "`401` on every `/v1` endpoint from then on, on every replica. `204` also when the session had ended " +
        "already. No body.",
      security: [{ bearer: [] }],
      responses: {
        204: { description: "The session has ended" },
        401: {
          description: "`invalid_token`: the bearer is no session JWT of this service",
          headers: {
            "WWW-Authenticate": {
              description: '`Bearer realm="oauth", error="invalid_token"`',
              schema: { type: "string" }
            }
          },
          content: json(ref("OAuthError"))
        }
      }
    }
  },
  "/oauth/jwks.json": {
    get: {
      operationId: "oauth.jwks",
      tags,
      summary: "The public keys that verify session JWTs",
      description: "A JSON Web Key Set of Ed25519 keys (`kid` names the one that signed a token); needs no credential.",
      security: [],
      responses: { 200: { description: "A JSON Web Key Set", content: json(ref("Jwks")) } }
    }
  },
  "/.well-known/oauth-authorization-server": metadataOperation("oauth.metadata"),
  "/.well-known/oauth-authorization-server/oauth": metadataOperation("oauth.metadataForIssuer"),
  "/.well-known/oauth-protected-resource": resourceMetadataOperation("oauth.resourceMetadata"),
  "/.well-known/oauth-protected-resource/v1": resourceMetadataOperation("oauth.resourceMetadataForV1")
}

/**
 * The document as served at `served`. Generated on the first call, not when this module loads (`fromApi` keeps it
 * for the `HttpApi` from then on): a server that never serves the docs never holds the generated document's
 * objects (bench/README.md). The server asks once per address it serves and keeps the bytes it sends
 * (src/Http/Docs.ts).
 */
export const openApiDocument = (served: Served) => {
  const generated = OpenApi.fromApi(Api)
  return document(generated, served)
}

const document = (fromApi: OpenApi.OpenAPISpec, served: Served) => {
  // A copy: `fromApi` keeps its document for the `HttpApi`, and the leftovers are taken out of this one in place.
  const generated = structuredClone(fromApi)
  removeGeneratorLeftovers(generated)
  const paths = { ...completePaths(generated.paths, generated.components.schemas), ...oauthPaths }
  return completed(generated, served, paths, usedSchemas({ ...generated.components.schemas, ...oauthSchemas() }, paths))
}

const completed = (
  generated: OpenApi.OpenAPISpec,
  served: Served,
  paths: Record<string, unknown>,
  schemas: Record<string, unknown>
) => ({
  ...generated,
  servers: [{ url: served.baseUrl, description: "this server" }],
  paths,
  components: {
    ...generated.components,
    schemas,
    headers: responseHeaders,
    securitySchemes: {
      ...generated.components.securitySchemes,
      oauth2: {
        type: "oauth2",
        description:
          "OAuth 2.0 authorization code (PKCE with S256; required for public clients). Access tokens are " +
          "`pco_…`, sent as `Authorization: Bearer`.",
        flows: {
          authorizationCode: {
            authorizationUrl: `${served.authUrl}/authorize`,
            tokenUrl: `${served.authUrl}/token`,
            refreshUrl: `${served.authUrl}/token`,
            scopes: scopeDescriptions
          }
        }
      },
      oauthClientBasic: {
        type: "http",
        scheme: "basic",
        description: "OAuth client authentication (`client_secret_basic`): client id and secret, each form-encoded"
      }
    }
  },
  tags: [
    ...generated.tags,
    { name: "OAuth", description: "The authorization server (RFC 6749, 7009, 7662, 8414, 9207, 9728)" }
  ]
})
