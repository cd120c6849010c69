/**
 * The prelude the API tests over HTTP share (teams, invitations, deployments): a server with named users, a
 * `call` as one of them, the error-envelope checks, and joining a team the API's own way (invite, then accept).
 */
import { expect } from "bun:test"
import { startInProcess } from "./in-process.ts"
import type { Response, Server, TestUser } from "./server.ts"

/** Every scope a team test needs. */
export const ALL_SCOPES = "read,write,team:manage"

/** `user` calls `path` with their key on `on` (the file's server unless given); `body` is sent as JSON. */
export type Call = (user: TestUser, method: string, path: string, body?: unknown, on?: Server) => Promise<Response>

export const callOn =
  (server: () => Server): Call =>
  (user, method, path, body, on = server()) =>
    on.request(path, { method, key: user.key, ...(body !== undefined ? { body } : {}) })

/** A user to make: a name (all of `ALL_SCOPES`) or a name and its key's scopes. */
export type UserSpec = string | readonly [name: string, scopes: string]

/**
 * A fresh server (with `env`) and one user per spec, in the order given — made in this process by the service's
 * own layers (see fixtures.ts), concurrently.
 */
export const serverWithUsers = async <const Specs extends ReadonlyArray<UserSpec>>(
  specs: Specs,
  options: { readonly env?: Record<string, string> } = {}
): Promise<{ readonly server: Server; readonly users: { -readonly [I in keyof Specs]: TestUser } }> => {
  const server = await startInProcess(options.env === undefined ? {} : { env: options.env })
  const users = await usersOn(server, specs)
  return { server, users }
}

/** One user per spec on `server`, in the order given. */
export const usersOn = async <const Specs extends ReadonlyArray<UserSpec>>(
  server: Server,
  specs: Specs
): Promise<{ -readonly [I in keyof Specs]: TestUser }> => {
  const made = await Promise.all(
    specs.map((spec) =>
      typeof spec === "string"
        ? server.user({ name: spec, scopes: ALL_SCOPES })
        : server.user({ name: spec[0], scopes: spec[1] })
    )
  )
  // Promise.all keeps the order and the length of `specs`; the mapped tuple type says so to the checker.
  return made as { -readonly [I in keyof Specs]: TestUser }
}

/** An error answer: its status, the envelope's code and status, a request id, and (when given) a word in the message. */
export const expectError = (res: { status: number; body: any }, status: number, code: string, mentions?: string) => {
  expect(res.status).toBe(status)
  expect(res.body.error).toMatchObject({ code, status })
  expect(res.body.error.request_id).toMatch(/^req_/)
  if (mentions !== undefined) expect(res.body.error.message).toContain(mentions)
}

/** A 400 `validation_failed` whose details name `field`. */
export const expectValidation = (res: { status: number; body: any }, field: string) => {
  expectError(res, 400, "validation_failed")
  expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field)
}

/** `user` joins `teamId` with `role` the API's own way: `by` invites them (201), they accept (200). */
export const joinTeam = async (
  server: Server,
  teamId: string,
  user: TestUser,
  role: string,
  by: TestUser
): Promise<void> => {
  const call = callOn(() => server)
  const invited = await call(by, "POST", `/v1/teams/${teamId}/invitations`, { email: user.email, role })
  expect(invited.status).toBe(201)
  const accepted = await call(user, "POST", `/v1/invitations/${invited.body.data.id}/accept`)
  expect(accepted.status).toBe(200)
}
