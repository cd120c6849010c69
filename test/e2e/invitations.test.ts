/**
 * Invitations over HTTP: inviting (who may invite whom), one pending per team and email, members not invitable,
 * a team's list with its status filter, revoking, the invitee's own list (any email case), accepting and declining,
 * and expiry — on a second server whose INVITATION_TTL is a second, so nothing waits seven days.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import {
  ALL_SCOPES,
  callOn,
  expectError,
  expectValidation,
  joinTeam,
  serverWithUsers,
  usersOn
} from "../support/api.ts"
import { TIMESTAMP } from "../support/helpers.ts"
import { startInProcess, startupFailureInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let short: Server // INVITATION_TTL=1s
let olive: TestUser // owner
let adam: TestUser // admin
let mia: TestUser // member
let ivan: TestUser // the invitee
let omar: TestUser // never involved

const TTL_MS = 1000
const INVITATION_ID = /^inv_[0-7][0-9a-hjkmnp-tv-z]{25}$/
const UNKNOWN_INVITATION = "inv_01jd3xkq8w0000000000000000"
const SEVEN_DAYS_MS = 7 * 24 * 60 * 60 * 1000

beforeAll(async () => {
  ;[
    {
      server,
      users: [olive, adam, mia, ivan, omar]
    },
    short
  ] = await Promise.all([
    serverWithUsers(["Olive", "Adam", "Mia", "Ivan", "Omar"]),
    startInProcess({ env: { INVITATION_TTL: `${TTL_MS}ms` } })
  ])
}, 60_000)
afterAll(async () => {
  await Promise.all([server?.stop(), short?.stop()])
}, 20_000)

const call = callOn(() => server)

const invite = (by: TestUser, teamId: string, email: string, role = "member", on: Server = server) =>
  call(by, "POST", `/v1/teams/${teamId}/invitations`, { email, role }, on)

const accept = (user: TestUser, id: string, on: Server = server) =>
  call(user, "POST", `/v1/invitations/${id}/accept`, undefined, on)
const decline = (user: TestUser, id: string, on: Server = server) =>
  call(user, "POST", `/v1/invitations/${id}/decline`, undefined, on)

/** A team owned by Olive with Adam as admin and Mia as member. */
const makeTeam = async (name = "Team") => {
  const team = (await call(olive, "POST", "/v1/teams", { name })).body.data as { id: string }
  await joinTeam(server, team.id, adam, "admin", olive)
  await joinTeam(server, team.id, mia, "member", olive)
  return team
}

const teamInvitations = async (teamId: string, query = "", as: TestUser = olive, on: Server = server) => {
  const res = await call(as, "GET", `/v1/teams/${teamId}/invitations${query}`, undefined, on)
  expect(res.status).toBe(200)
  return res.body.data as Array<{ id: string; status: string; email: string; answered_at: string | null }>
}

/** The invitations addressed to `user` (`query` adds to `per_page=100`: `&status=…`). */
const myInvitations = async (user: TestUser, on: Server = server, query = "") => {
  const res = await call(user, "GET", `/v1/invitations?per_page=100${query}`, undefined, on)
  expect(res.status).toBe(200)
  return res.body.data as Array<{ id: string; team_id: string; status: string; answered_at: string | null }>
}

describe("POST /v1/teams/:team_id/invitations", () => {
  test("201 with the invitation: inv_ id, lower-cased email, pending, seven days to answer", async () => {
    const team = await makeTeam()
    const res = await invite(olive, team.id, `  ${ivan.email.toUpperCase()} `, "admin")
    expect(res.status).toBe(201)
    const invitation = res.body.data
    expect(Object.keys(invitation).sort()).toEqual([
      "answered_at",
      "created_at",
      "email",
      "expires_at",
      "id",
      "invited_by",
      "invited_by_name",
      "role",
      "status",
      "team_id",
      "team_name"
    ])
    expect(invitation.id).toMatch(INVITATION_ID)
    expect(invitation).toMatchObject({
      team_id: team.id,
      email: ivan.email,
      role: "admin",
      status: "pending",
      invited_by: olive.id,
      answered_at: null,
      team_name: "Team",
      invited_by_name: olive.name
    })
    expect(invitation.created_at).toMatch(TIMESTAMP)
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(SEVEN_DAYS_MS)
    expect(res.body.meta.request_id).toMatch(/^req_/)
  })

  test("owners invite any role; admins invite members and admins but not owners (403 naming owner)", async () => {
    const team = await makeTeam()
    const someone = (label: string) => `${label}.${Math.random().toString(36).slice(2, 8)}@example.com`
    expect((await invite(olive, team.id, someone("o"), "owner")).status).toBe(201)
    expect((await invite(adam, team.id, someone("a"), "admin")).status).toBe(201)
    expect((await invite(adam, team.id, someone("m"), "member")).body.data.invited_by).toBe(adam.id)
    expectError(await invite(adam, team.id, someone("x"), "owner"), 403, "forbidden", "owner role")
    expectError(await invite(mia, team.id, someone("y"), "member"), 403, "forbidden", "owner or admin")
    expectError(await invite(omar, team.id, someone("z"), "member"), 404, "not_found")
    expectError(await invite(olive, "team_01jd3xkq8w0000000000000000", someone("z")), 404, "not_found")
  })

  test("one pending invitation per team and email (any case): 409; a declined one leaves room for a new one", async () => {
    const team = await makeTeam()
    const first = await invite(olive, team.id, ivan.email)
    expect(first.status).toBe(201)
    expectError(await invite(adam, team.id, ivan.email.toUpperCase(), "admin"), 409, "conflict", "pending")
    // Another team may invite the same person.
    const other = await makeTeam("Other")
    expect((await invite(olive, other.id, ivan.email)).status).toBe(201)
    expect((await decline(ivan, first.body.data.id)).status).toBe(200)
    const again = await invite(olive, team.id, ivan.email)
    expect(again.status).toBe(201)
    expect(again.body.data.id).not.toBe(first.body.data.id)
  })

  test("inviting someone who is already a member is 409", async () => {
    const team = await makeTeam()
    expectError(await invite(olive, team.id, mia.email.toUpperCase()), 409, "conflict", "already a member")
    expectError(await invite(adam, team.id, olive.email), 409, "conflict", "already a member")
    expect(await teamInvitations(team.id, "?status=pending")).toEqual([])
  })

  test("bad email, role or body is validation_failed; team:manage is needed", async () => {
    const team = await makeTeam()
    const post = (body: unknown) => call(olive, "POST", `/v1/teams/${team.id}/invitations`, body)
    expectValidation(await post({ email: "not-an-email", role: "member" }), "email")
    expectValidation(await post({ email: "", role: "member" }), "email")
    expectValidation(await post({ email: `${"x".repeat(250)}@example.com`, role: "member" }), "email")
    expectValidation(await post({ email: "a@example.com", role: "boss" }), "role")
    expectValidation(await post({ email: "a@example.com" }), "role")
    expectValidation(await post({ role: "member" }), "email")
    expectValidation(await post({ email: "a@example.com", role: "member", status: "accepted" }), "status")
    const writer = await server.user({ scopes: "read,write" })
    expectError(await invite(writer, team.id, "a@example.com"), 403, "forbidden", "team:manage")
  })
})

describe("GET /v1/teams/:team_id/invitations", () => {
  test("any member lists them, filtered by status, with paging and a Link header; non-members get 404", async () => {
    const team = await makeTeam()
    const pending = await invite(olive, team.id, ivan.email)
    const declined = await invite(olive, team.id, omar.email)
    await decline(omar, declined.body.data.id)
    const revoked = await invite(olive, team.id, `gone.${Date.now()}@example.com`)
    await call(olive, "DELETE", `/v1/teams/${team.id}/invitations/${revoked.body.data.id}`)

    // Two accepted ones from makeTeam, plus the three above.
    const all = await teamInvitations(team.id, "?per_page=100", mia)
    expect(all).toHaveLength(5)
    const byStatus = Object.fromEntries(all.map((i) => [i.id, i.status]))
    expect(byStatus[pending.body.data.id]).toBe("pending")
    expect(byStatus[declined.body.data.id]).toBe("declined")
    expect(byStatus[revoked.body.data.id]).toBe("revoked")
    expect((await teamInvitations(team.id, "?status=accepted")).map((i) => i.email).sort()).toEqual(
      [adam.email, mia.email].sort()
    )
    expect((await teamInvitations(team.id, "?status=pending")).map((i) => i.id)).toEqual([pending.body.data.id])
    expect(await teamInvitations(team.id, "?status=expired")).toEqual([])
    expect(
      (await teamInvitations(team.id, `?search=${encodeURIComponent(omar.email.slice(0, 8))}`)).map((i) => i.id)
    ).toEqual([declined.body.data.id])

    const paged = await call(olive, "GET", `/v1/teams/${team.id}/invitations?per_page=2&page=2&order=asc`)
    expect(paged.body.meta).toMatchObject({ total: 5, page: 2, per_page: 2 })
    expect(paged.body.data).toHaveLength(2)
    expect(paged.headers.get("link")).toContain('rel="next"')
    expect(paged.headers.get("link")).toContain('rel="prev"')

    expectValidation(await call(olive, "GET", `/v1/teams/${team.id}/invitations?status=nope`), "status")
    expectError(await call(omar, "GET", `/v1/teams/${team.id}/invitations`), 404, "not_found")
  })
})

describe("DELETE /v1/teams/:team_id/invitations/:invitation_id", () => {
  test("owners and admins revoke a pending one (204, status revoked); the invitee can no longer accept", async () => {
    const team = await makeTeam()
    const first = (await invite(olive, team.id, ivan.email)).body.data
    expectError(
      await call(mia, "DELETE", `/v1/teams/${team.id}/invitations/${first.id}`),
      403,
      "forbidden",
      "owner or admin"
    )
    expectError(await call(omar, "DELETE", `/v1/teams/${team.id}/invitations/${first.id}`), 404, "not_found")
    const before = Date.now()
    const res = await call(adam, "DELETE", `/v1/teams/${team.id}/invitations/${first.id}`)
    expect(res.status).toBe(204)
    expect(res.text).toBe("")
    const [listed] = await teamInvitations(team.id, "?status=revoked")
    expect(listed).toMatchObject({ id: first.id, status: "revoked" })
    // answered_at of a revoked invitation: when it was revoked.
    expect(listed?.answered_at).toMatch(TIMESTAMP)
    expect(Date.parse(listed!.answered_at!)).toBeGreaterThanOrEqual(before - 1)
    expect(Date.parse(listed!.answered_at!)).toBeLessThanOrEqual(Date.now())
    expect((await myInvitations(ivan)).map((i) => i.id)).not.toContain(first.id)
    expectError(await accept(ivan, first.id), 409, "conflict", "revoked")
    expectError(await call(olive, "DELETE", `/v1/teams/${team.id}/invitations/${first.id}`), 409, "conflict", "revoked")
  })

  test("409 once answered; 404 for an unknown one or one of another team", async () => {
    const team = await makeTeam()
    const other = await makeTeam("Other")
    const answered = (await invite(olive, team.id, ivan.email)).body.data
    await accept(ivan, answered.id)
    expectError(
      await call(olive, "DELETE", `/v1/teams/${team.id}/invitations/${answered.id}`),
      409,
      "conflict",
      "accepted"
    )
    const elsewhere = (await invite(olive, other.id, omar.email)).body.data
    expectError(await call(olive, "DELETE", `/v1/teams/${team.id}/invitations/${elsewhere.id}`), 404, "not_found")
    expectError(await call(olive, "DELETE", `/v1/teams/${team.id}/invitations/${UNKNOWN_INVITATION}`), 404, "not_found")
    expectValidation(await call(olive, "DELETE", `/v1/teams/${team.id}/invitations/nope`), "invitation_id")
    expect((await teamInvitations(other.id, "?status=pending")).map((i) => i.id)).toEqual([elsewhere.id])
  })
})

describe("the invitee: GET /v1/invitations, accept, decline", () => {
  test("lists only open invitations addressed to the caller's email, whatever its case", async () => {
    const [team, other] = [await makeTeam("A"), await makeTeam("B")]
    const upper = (await invite(olive, team.id, ivan.email.toUpperCase())).body.data
    const lower = (await invite(adam, other.id, ivan.email)).body.data
    const notMine = (await invite(olive, team.id, omar.email)).body.data
    const mine = await myInvitations(ivan)
    expect(mine.map((i) => i.id)).toEqual(expect.arrayContaining([upper.id, lower.id]))
    expect(mine.map((i) => i.id)).not.toContain(notMine.id)
    for (const i of mine) expect(i.status).toBe("pending")
    expect((await myInvitations(omar)).map((i) => i.id)).toContain(notMine.id)
    expect((await myInvitations(olive)).map((i) => i.id)).not.toContain(upper.id)
    const res = await call(ivan, "GET", "/v1/invitations?per_page=1")
    expect(res.headers.get("link")).toContain('rel="first"')
  })

  test("status filter: pending by default; accepted, declined, revoked, expired or all — only ever the caller's", async () => {
    const [iris] = await usersOn(server, ["Iris"])
    const [team, other] = [await makeTeam("C"), await makeTeam("D")]
    const declined = (await invite(olive, team.id, iris.email)).body.data
    expect((await decline(iris, declined.id)).status).toBe(200)
    const revoked = (await invite(olive, team.id, iris.email.toUpperCase())).body.data
    expect((await call(olive, "DELETE", `/v1/teams/${team.id}/invitations/${revoked.id}`)).status).toBe(204)
    const pending = (await invite(adam, team.id, iris.email, "admin")).body.data
    const accepted = (await invite(olive, other.id, iris.email)).body.data
    expect((await accept(iris, accepted.id)).status).toBe(200)
    // Someone else's, in every status they could be in: never listed for Iris.
    const omars = (await invite(olive, other.id, omar.email)).body.data
    await call(olive, "DELETE", `/v1/teams/${other.id}/invitations/${omars.id}`)

    const ids = async (query: string) => (await myInvitations(iris, server, query)).map((i) => i.id)
    expect(await ids("")).toEqual([pending.id])
    expect(await ids("&status=pending")).toEqual([pending.id])
    expect(await ids("&status=accepted")).toEqual([accepted.id])
    expect(await ids("&status=declined")).toEqual([declined.id])
    expect(await ids("&status=revoked")).toEqual([revoked.id])
    expect(await ids("&status=expired")).toEqual([])
    // Newest first (the default order), like every list.
    expect(await ids("&status=all")).toEqual([accepted.id, pending.id, revoked.id, declined.id])
    expect(await ids("&status=all&order=asc")).toEqual([declined.id, revoked.id, pending.id, accepted.id])

    const all = await myInvitations(iris, server, "&status=all")
    const byId = Object.fromEntries(all.map((i) => [i.id, i]))
    expect(byId[pending.id]).toMatchObject({ status: "pending", answered_at: null })
    for (const [id, status] of [
      [accepted.id, "accepted"],
      [declined.id, "declined"],
      [revoked.id, "revoked"]
    ]) {
      expect(byId[id!]).toMatchObject({ status })
      expect(byId[id!]?.answered_at).toMatch(TIMESTAMP)
    }

    // Paging and the Link header keep the filter; meta.total counts only the filtered ones.
    const paged = await call(iris, "GET", "/v1/invitations?status=all&per_page=3&page=2")
    expect(paged.status).toBe(200)
    expect(paged.body.meta).toMatchObject({ total: 4, page: 2, per_page: 3 })
    expect(paged.body.data.map((i: { id: string }) => i.id)).toEqual([declined.id])
    expect(paged.headers.get("link")).toContain("status=all")
    expect((await call(iris, "GET", "/v1/invitations?status=revoked")).body.meta.total).toBe(1)

    expect((await myInvitations(omar, server, "&status=revoked")).map((i) => i.id)).toContain(omars.id)
    expect(await ids("&status=all")).not.toContain(omars.id)

    const bad = await call(iris, "GET", "/v1/invitations?status=open")
    expectValidation(bad, "status")
    expect(bad.body.error.message).toContain("all")
    expectValidation(await call(iris, "GET", "/v1/invitations?status="), "status")
  })

  test("accept: 200 with the member record; the invitee is now a member with the invited role", async () => {
    const team = await makeTeam()
    const invitation = (await invite(adam, team.id, ivan.email.toUpperCase(), "admin")).body.data
    const res = await accept(ivan, invitation.id)
    expect(res.status).toBe(200)
    expect(Object.keys(res.body.data).sort()).toEqual(["avatar_url", "email", "joined_at", "name", "role", "user_id"])
    expect(res.body.data).toMatchObject({ user_id: ivan.id, email: ivan.email, name: "Ivan", role: "admin" })
    expect((await call(ivan, "GET", `/v1/teams/${team.id}`)).body.data.role).toBe("admin")
    const [accepted] = await teamInvitations(team.id, "?status=accepted&sort=created_at&order=desc&per_page=1")
    expect(accepted).toMatchObject({ id: invitation.id, status: "accepted" })
    expect(accepted?.answered_at).toMatch(TIMESTAMP)
    expect((await myInvitations(ivan)).map((i) => i.id)).not.toContain(invitation.id)
    expectError(await accept(ivan, invitation.id), 409, "conflict", "accepted")
    expectError(await decline(ivan, invitation.id), 409, "conflict", "accepted")
  })

  test("someone else's invitation is 404 to accept or decline — even for the team's owner", async () => {
    const team = await makeTeam()
    const invitation = (await invite(olive, team.id, ivan.email)).body.data
    for (const user of [olive, adam, mia, omar]) {
      expectError(await accept(user, invitation.id), 404, "not_found")
      expectError(await decline(user, invitation.id), 404, "not_found")
    }
    expectError(await accept(ivan, UNKNOWN_INVITATION), 404, "not_found")
    expectValidation(await accept(ivan, "nope"), "invitation_id")
    expect((await teamInvitations(team.id, "?status=pending")).map((i) => i.id)).toEqual([invitation.id])
  })

  test("decline: 200 with the declined invitation; no membership", async () => {
    const team = await makeTeam()
    const invitation = (await invite(olive, team.id, ivan.email)).body.data
    const res = await decline(ivan, invitation.id)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ id: invitation.id, status: "declined", team_id: team.id })
    expect(res.body.data.answered_at).toMatch(TIMESTAMP)
    expectError(await call(ivan, "GET", `/v1/teams/${team.id}`), 404, "not_found")
    expectError(await decline(ivan, invitation.id), 409, "conflict", "declined")
    expectError(await accept(ivan, invitation.id), 409, "conflict", "declined")
  })

  test("someone who became a member meanwhile cannot accept (409); the invitation stays pending", async () => {
    const team = await makeTeam()
    const invitation = (await invite(olive, team.id, ivan.email)).body.data
    await server.fixtures.addMember(team.id, ivan.id)
    expectError(await accept(ivan, invitation.id), 409, "conflict", "already a member")
    expect((await teamInvitations(team.id, "?status=pending")).map((i) => i.id)).toEqual([invitation.id])
  }, 30_000)

  test("an invitation to an email with no account yet is answered once the account exists", async () => {
    const team = await makeTeam()
    const email = `newcomer.${Date.now()}@example.com`
    const invitation = (await invite(olive, team.id, email)).body.data
    const newcomer = await server.fixtures.user({ email, name: "Newcomer", scopes: "read,write" })
    expect((await myInvitations(newcomer)).map((i) => i.id)).toEqual([invitation.id])
    expect((await accept(newcomer, invitation.id)).body.data).toMatchObject({ user_id: newcomer.id, role: "member" })
  }, 30_000)

  test("scopes: read to list; write or team:manage to answer", async () => {
    const team = await makeTeam()
    const [readOnly, manageOnly] = await Promise.all([
      server.user({ scopes: "read" }),
      server.user({ scopes: "team:manage" })
    ])
    const forRead = (await invite(olive, team.id, readOnly.email)).body.data
    const forManage = (await invite(olive, team.id, manageOnly.email)).body.data
    expect((await myInvitations(readOnly)).map((i) => i.id)).toEqual([forRead.id])
    expectError(await accept(readOnly, forRead.id), 403, "forbidden")
    expectError(await decline(readOnly, forRead.id), 403, "forbidden")
    expectError(await call(manageOnly, "GET", "/v1/invitations"), 403, "forbidden", "read")
    expect((await accept(manageOnly, forManage.id)).status).toBe(200)
  }, 30_000)
})

describe("expiry (INVITATION_TTL=1s on a second server)", () => {
  test("past expires_at an invitation is expired: listed so, not the invitee's, and cannot be answered or revoked (409)", async () => {
    const [owner, invitee] = await usersOn(short, [
      ["Owner", ALL_SCOPES],
      ["Invitee", ALL_SCOPES]
    ])
    const team = (await call(owner, "POST", "/v1/teams", { name: "Short" }, short)).body.data
    const invitation = (await invite(owner, team.id, invitee.email, "member", short)).body.data
    expect(invitation.status).toBe("pending")
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(TTL_MS)
    expect((await myInvitations(invitee, short)).map((i) => i.id)).toEqual([invitation.id])

    await Bun.sleep(Date.parse(invitation.expires_at) - Date.now() + 50)

    expect(await teamInvitations(team.id, "?status=expired", owner, short)).toEqual([
      { ...invitation, status: "expired" }
    ])
    expect(await teamInvitations(team.id, "?status=pending", owner, short)).toEqual([])
    expect(await myInvitations(invitee, short)).toEqual([])
    // The invitee still finds it under `expired` (and `all`); answered_at stays null: no one answered it.
    expect(await myInvitations(invitee, short, "&status=expired")).toEqual([{ ...invitation, status: "expired" }])
    expect((await myInvitations(invitee, short, "&status=all")).map((i) => [i.id, i.status, i.answered_at])).toEqual([
      [invitation.id, "expired", null]
    ])
    expectError(await accept(invitee, invitation.id, short), 409, "conflict", "expired")
    expectError(await decline(invitee, invitation.id, short), 409, "conflict", "expired")
    expectError(
      await call(owner, "DELETE", `/v1/teams/${team.id}/invitations/${invitation.id}`, undefined, short),
      409,
      "conflict",
      "expired"
    )
    expectError(await call(invitee, "GET", `/v1/teams/${team.id}`, undefined, short), 404, "not_found")

    // A new invitation to the same email may be made; the old one stays expired.
    const fresh = await invite(owner, team.id, invitee.email, "member", short)
    expect(fresh.status).toBe(201)
    expect((await accept(invitee, fresh.body.data.id, short)).status).toBe(200)
    const statuses = (await teamInvitations(team.id, "", owner, short)).map((i) => [i.id, i.status])
    expect(statuses).toEqual(
      expect.arrayContaining([
        [invitation.id, "expired"],
        [fresh.body.data.id, "accepted"]
      ])
    )
  }, 30_000)

  test("an INVITATION_TTL that is not a duration stops the server at start-up", async () => {
    // On the server in this process: the same start-up code (a process's refusal: test/e2e/config.test.ts).
    const error = await startupFailureInProcess({ INVITATION_TTL: "a week" })
    expect(String(error)).toContain("INVITATION_TTL")
  }, 60_000)
})
