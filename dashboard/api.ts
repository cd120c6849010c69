/**
 * The dashboard's only ways to talk to the service: `{auth_url}/login` for a session JWT, then the public `/v1` API
 * with `Authorization: Bearer <jwt>` — the same calls any other client makes. The token lives in memory and in
 * `sessionStorage` (so a reload keeps you signed in, a closed tab does not); signing out ends the session at the
 * service (`{auth_url}/logout`) and forgets it.
 *
 * `api` is `openapi-fetch`'s client typed by the contract (`dashboard/generated/api.ts`, generated from the service's
 * OpenAPI document: `bun run generate:dashboard-types`): `api.GET("/v1/projects/{id}", { params: { path: { id } } })`
 * type-checks the path, the parameters and the body, and types the answer. A failure is thrown as an `ApiError`
 * (never returned), so an answer is a success: `dataOf` takes its envelope's `data`, `taggedOf` that and its `ETag`.
 */
import createClient from "openapi-fetch"
import type { paths } from "./generated/api.ts"

export interface FieldIssue {
  readonly field: string
  readonly message: string
}

/** An API failure, as the envelope tells it: `error.message`, `error.code`, field `details`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ReadonlyArray<FieldIssue> = [],
    readonly requestId?: string
  ) {
    super(message)
  }
}

const STORAGE_KEY = "pcs.dashboard.session"

interface Session {
  readonly token: string
  /** Milliseconds since the epoch. */
  readonly expiresAt: number
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const loadSession = (): Session | undefined => {
  const text = sessionStorage.getItem(STORAGE_KEY)
  if (text === null) return undefined
  const parsed: unknown = JSON.parse(text)
  if (
    isRecord(parsed) &&
    typeof parsed.token === "string" &&
    typeof parsed.expiresAt === "number" &&
    parsed.expiresAt > Date.now()
  ) {
    return { token: parsed.token, expiresAt: parsed.expiresAt }
  }
  sessionStorage.removeItem(STORAGE_KEY)
  return undefined
}

let current: Session | undefined = loadSession()

export const signedIn = (): boolean => current !== undefined && current.expiresAt > Date.now()

/** Forgets the session here (the API refused it, or it expired). */
export const signOut = (): void => {
  current = undefined
  sessionStorage.removeItem(STORAGE_KEY)
}

/**
 * The "Sign out" button: ends the session at the service (`POST {auth_url}/logout`, so the token is refused
 * everywhere at once), then forgets it here. Forgotten even when the service cannot be reached.
 */
export const logOut = async (): Promise<void> => {
  const session = current
  signOut()
  if (session === undefined) return
  await fetch("/oauth/logout", { method: "POST", headers: { authorization: `Bearer ${session.token}` } }).catch(
    () => undefined
  )
}

let onSessionEnded: (message: string) => void = () => {}
/** Called when the API refuses the session (expired or revoked): main.ts sends the person to the sign-in page. */
export const whenSessionEnds = (handler: (message: string) => void): void => {
  onSessionEnded = handler
}

const readBody = async (response: Response): Promise<unknown> => {
  const text = await response.text()
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const unreachable = () =>
  new ApiError(0, "network", "The service could not be reached. Check your connection and try again.")

/** `POST {auth_url}/login`: the answer is RFC 6749 shaped (`error_description`), not the `/v1` envelope. */
export const signIn = async (email: string, password: string): Promise<void> => {
  const response = await fetch("/oauth/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password })
  }).catch(() => Promise.reject(unreachable()))
  const body = await readBody(response)
  if (response.ok && isRecord(body) && typeof body.access_token === "string") {
    const expiresIn = typeof body.expires_in === "number" ? body.expires_in : 3600
    current = { token: body.access_token, expiresAt: Date.now() + expiresIn * 1000 }
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(current))
    return
  }
  const description =
    isRecord(body) && typeof body.error_description === "string"
      ? body.error_description
      : `Sign-in failed (HTTP ${response.status})`
  const retryAfter = response.headers.get("retry-after")
  throw new ApiError(
    response.status,
    isRecord(body) && typeof body.error === "string" ? body.error : "sign_in_failed",
    retryAfter === null ? description : `${description} (try again in ${retryAfter} s)`
  )
}

const toError = (status: number, body: unknown): ApiError => {
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined
  if (error === undefined) return new ApiError(status, "http_error", `The service answered HTTP ${status}`)
  const details = Array.isArray(error.details)
    ? error.details.flatMap(
        (detail): Array<FieldIssue> =>
          isRecord(detail) && typeof detail.field === "string" && typeof detail.message === "string"
            ? [{ field: detail.field, message: detail.message }]
            : []
      )
    : []
  return new ApiError(
    status,
    typeof error.code === "string" ? error.code : "http_error",
    typeof error.message === "string" ? error.message : `The service answered HTTP ${status}`,
    details,
    typeof error.request_id === "string" ? error.request_id : undefined
  )
}

/** A record with the `ETag` it was read with: send it back as `If-Match` so an edit never overwrites another's. */
export interface Tagged<T> {
  readonly data: T
  readonly etag: string | undefined
}

/** Someone else changed the record since it was read (a write with `If-Match` answered 412). */
export const isChangedMeanwhile = (error: unknown): boolean =>
  error instanceof ApiError && error.code === "precondition_failed"

/**
 * The `If-Match` for a change of `shown`, a record the page drew from a list (a list's rows carry no `ETag`): the tag
 * of its single read, as long as that read is still the record shown (the tag stands for exactly that
 * representation). When it is not, someone else changed it since the page showed it: the change is not sent, and
 * fails as the API would have failed it (`precondition_failed`).
 */
export const tagOfShown = async <T>(shown: T, read: () => Promise<Tagged<T>>): Promise<string | undefined> => {
  const current = await read()
  if (JSON.stringify(current.data) === JSON.stringify(shown)) return current.etag
  throw new ApiError(412, "precondition_failed", "Someone else changed it since the page showed it")
}

/**
 * Sends one `/v1` request with the session (its `Authorization`): resolves with a success, throws an `ApiError` for
 * anything else (a 401 also ends the session here).
 */
const send = async (request: Request): Promise<Response> => {
  if (current === undefined) {
    onSessionEnded("Sign in to continue.")
    throw new ApiError(401, "unauthorized", "You are signed out.")
  }
  request.headers.set("authorization", `Bearer ${current.token}`)
  request.headers.set("accept", "application/json")
  const response = await fetch(request).catch(() => Promise.reject(unreachable()))
  if (response.ok) return response
  const error = toError(response.status, await readBody(response))
  if (response.status === 401) {
    signOut()
    onSessionEnded(`Your session has ended: ${error.message}. Sign in again.`)
  }
  throw error
}

/** A query: a parameter left undefined or empty is not sent (a filter left blank is no filter). */
const serializeQuery = (query: Record<string, unknown>): string => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value))
  }
  return params.toString()
}

/** The `/v1` API, typed by the contract. */
export const api = createClient<paths>({ fetch: send, querySerializer: serializeQuery })

/** What every answer of `api` is (a failure was thrown): its body, when it has one, and the response. */
interface Answer<Body> {
  readonly data?: Body
  readonly response: Response
}

const missing = () => new ApiError(0, "bad_response", "The service sent an answer the dashboard does not understand")

/** The answer's body: a list's page (`{data, meta}`), or any body read whole. */
export const bodyOf = <Body>(answer: Answer<Body>): Body => {
  if (answer.data === undefined) throw missing()
  return answer.data
}

/** A list's answer when it is a numbered page (one asked for with `page`, not a cursor's `after`). */
type Numbered<Body> = Extract<Body, { readonly meta: { readonly total: number; readonly page: number } }>
const isNumbered = <Body extends { readonly meta: object }>(body: Body): body is Numbered<Body> =>
  "total" in body.meta && typeof body.meta.total === "number" && "page" in body.meta

/** The numbered page of a list that also answers by cursor (`/v1/events`, the audit logs). */
export const pageOf = <Body extends { readonly meta: object }>(answer: Answer<Body>): Numbered<Body> => {
  const body = bodyOf(answer)
  if (isNumbered(body)) return body
  throw missing()
}

/** The envelope's `data` of an answer. */
export const dataOf = <T>(answer: Answer<{ readonly data: T }>): T => bodyOf(answer).data

/** The envelope's `data` with the answer's `ETag`, for an edit that must not overwrite someone else's. */
export const taggedOf = <T>(answer: Answer<{ readonly data: T }>): Tagged<T> => ({
  data: dataOf(answer),
  etag: answer.response.headers.get("etag") ?? undefined
})

/** A page number from the address (`?page=2`), or undefined (the first page) for anything else. */
export const pageParam = (text: string): number | undefined => {
  const page = Number(text)
  return Number.isInteger(page) && page > 0 ? page : undefined
}

/** `text` when it is one of `values` (a filter or a choice from the address or a form), else undefined. */
export const oneOf = <const T extends string>(values: ReadonlyArray<T>, text: string): T | undefined =>
  values.find((value) => value === text)

/** Those of `values` that `texts` name (checked boxes), in the order of `values`. */
export const someOf = <const T extends string>(values: ReadonlyArray<T>, texts: ReadonlyArray<string>): Array<T> =>
  values.filter((value) => texts.includes(value))

export type Query = Record<string, string | number | undefined>

/** `path` with `query` (a parameter left undefined or empty is not sent), as the client sends its queries. */
export const withQuery = (path: string, query: Query = {}): string => {
  const text = serializeQuery(query)
  return text === "" ? path : `${path}?${text}`
}

/** A message for anything a request can throw. */
export const messageOf = (error: unknown): string =>
  error instanceof ApiError || error instanceof Error ? error.message : String(error)
