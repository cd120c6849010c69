/**
 * The dashboard's only ways to talk to the service: `{auth_url}/login` for a session JWT, then the public `/v1` API
 * with `Authorization: Bearer <jwt>` — the same calls any other client makes. The token lives in memory and in
 * `sessionStorage` (so a reload keeps you signed in, a closed tab does not); signing out ends the session at the
 * service (`{auth_url}/logout`) and forgets it.
 */
import type { ListMeta } from "./types.ts"

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

/** A record with the `ETag` it was read with: send it back as `ifMatch` so an edit never overwrites another's. */
export interface Tagged<T> {
  readonly data: T
  readonly etag: string | undefined
}

/** Options of a write: `ifMatch`, the `ETag` the record was read with (412 `precondition_failed` if it changed). */
export interface WriteOptions {
  readonly ifMatch?: string | undefined
}

/** Someone else changed the record since it was read (a write with `ifMatch` answered 412). */
export const isChangedMeanwhile = (error: unknown): boolean =>
  error instanceof ApiError && error.code === "precondition_failed"

/** Sends one `/v1` request with the session; resolves with the parsed body (undefined for 204). */
const send = async (method: string, path: string, payload?: unknown, options: WriteOptions = {}): Promise<unknown> =>
  (await sendTagged(method, path, payload, options)).body

const sendTagged = async (
  method: string,
  path: string,
  payload: unknown,
  options: WriteOptions
): Promise<{ readonly body: unknown; readonly etag: string | undefined }> => {
  if (current === undefined) {
    onSessionEnded("Sign in to continue.")
    throw new ApiError(401, "unauthorized", "You are signed out.")
  }
  const headers: Record<string, string> = { authorization: `Bearer ${current.token}`, accept: "application/json" }
  if (payload !== undefined) headers["content-type"] = "application/json"
  if (options.ifMatch !== undefined) headers["if-match"] = options.ifMatch
  const response = await fetch(`/v1${path}`, {
    method,
    headers,
    ...(payload === undefined ? {} : { body: JSON.stringify(payload) })
  }).catch(() => Promise.reject(unreachable()))
  const body = await readBody(response)
  if (response.ok) return { body, etag: response.headers.get("etag") ?? undefined }
  const error = toError(response.status, body)
  if (response.status === 401) {
    signOut()
    onSessionEnded(`Your session has ended: ${error.message}. Sign in again.`)
  }
  throw error
}

/** The envelope's `data`, typed as the endpoint documents it (the service is trusted to keep its contract). */
const hasData = <T>(body: unknown): body is { readonly data: T } => isRecord(body) && "data" in body
const isList = <T>(body: unknown): body is { readonly data: ReadonlyArray<T>; readonly meta: ListMeta } =>
  isRecord(body) && Array.isArray(body.data) && isRecord(body.meta) && typeof body.meta.total === "number"

const data = <T>(body: unknown): T => {
  if (hasData<T>(body)) return body.data
  throw new ApiError(0, "bad_response", "The service sent an answer the dashboard does not understand")
}

export type Query = Record<string, string | number | undefined>

export const withQuery = (path: string, query: Query = {}): string => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") params.set(name, String(value))
  }
  const text = params.toString()
  return text === "" ? path : `${path}?${text}`
}

export const api = {
  get: async <T>(path: string): Promise<T> => data<T>(await send("GET", path)),
  /** The record and its `ETag`, for an edit that must not overwrite someone else's. */
  getTagged: async <T>(path: string): Promise<Tagged<T>> => {
    const { body, etag } = await sendTagged("GET", path, undefined, {})
    return { data: data<T>(body), etag }
  },
  list: async <T>(
    path: string,
    query?: Query
  ): Promise<{ readonly data: ReadonlyArray<T>; readonly meta: ListMeta }> => {
    const body = await send("GET", withQuery(path, query))
    if (isList<T>(body)) return body
    throw new ApiError(0, "bad_response", "The service sent a list the dashboard does not understand")
  },
  post: async <T>(path: string, payload?: unknown): Promise<T> => data<T>(await send("POST", path, payload)),
  put: async <T>(path: string, payload: unknown, options?: WriteOptions): Promise<T> =>
    data<T>(await send("PUT", path, payload, options)),
  delete: async (path: string, options?: WriteOptions): Promise<void> => {
    await send("DELETE", path, undefined, options)
  }
}

/** A message for anything a request can throw. */
export const messageOf = (error: unknown): string =>
  error instanceof ApiError || error instanceof Error ? error.message : String(error)
