import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { type Fixtures, fixtures, uniqueEmail } from "../support/fixtures.ts"
import { TIMESTAMP } from "../support/helpers.ts"
import { freshDatabaseUrl, runCli } from "../support/server.ts"

/**
 * One database shared by the tests below, migrated first (in this process); `migrate` gets its own. Users that a
 * test needs only as the subject of another command are made in this process too: each CLI run is a process.
 */
let databaseUrl: string
let setup: Fixtures

/** Each CLI run is a process that boots and migrates: generous, so a loaded machine does not fail a test. */
const CLI_TIMEOUT = 60_000

beforeAll(async () => {
  databaseUrl = await freshDatabaseUrl()
  setup = fixtures(databaseUrl, { migrate: true })
  await setup.run(Effect.void)
}, 20_000)
afterAll(() => setup?.dispose())

const cli = (...args: Array<string>) => runCli(databaseUrl, args)

/** A successful run: exit 0, nothing on stderr that is an error, and stdout is exactly one JSON document. */
const ok = async (...args: Array<string>): Promise<any> => {
  const { stdout, stderr, code } = await cli(...args)
  if (code !== 0) throw new Error(`cli ${args.join(" ")} exited ${code}: ${stderr}`)
  expect(stderr).not.toContain("error")
  const document = JSON.parse(stdout) // throws on anything but one JSON document
  expect(document !== null && typeof document === "object" && !Array.isArray(document)).toBe(true)
  expect(Object.keys(document)).toEqual(["data"])
  return document.data
}

/** A refused run: non-zero exit, nothing on stdout, a message on stderr. */
const fails = async (...args: Array<string>) => {
  const { stdout, stderr, code } = await cli(...args)
  expect(code).not.toBe(0)
  expect(stdout.trim()).toBe("")
  expect(stderr.trim().length).toBeGreaterThan(0)
  expect(stderr).not.toMatch(/\n\s+at /) // a message, not a stack trace
  return stderr
}

describe("migrate", () => {
  test(
    "applies the migrations once; a second run applies none",
    async () => {
      const fresh = await freshDatabaseUrl()
      const first = await runCli(fresh, ["migrate"])
      expect(first.code).toBe(0)
      const applied = JSON.parse(first.stdout).data
      expect(Array.isArray(applied)).toBe(true)
      expect(applied.length).toBeGreaterThan(0)
      for (const migration of applied) {
        expect(typeof migration.id).toBe("number")
        expect(typeof migration.name).toBe("string")
      }
      expect(applied[0]).toEqual({ id: 1, name: "foundation" })
      const second = await runCli(fresh, ["migrate"])
      expect(second.code).toBe(0)
      expect(JSON.parse(second.stdout)).toEqual({ data: [] })
    },
    CLI_TIMEOUT
  )
})

describe("users create", () => {
  test(
    "prints the user record, email lower-cased and trimmed",
    async () => {
      const email = uniqueEmail("Mixed.Case")
      const user = await ok("users", "create", "--email", `  ${email.toUpperCase()} `, "--name", "Mixed Case")
      expect(Object.keys(user).sort()).toEqual(["avatar_url", "created_at", "email", "id", "name", "updated_at"])
      expect(user.id).toMatch(/^usr_[0-7][0-9a-hjkmnp-tv-z]{25}$/)
      expect(user.email).toBe(email.toLowerCase())
      expect(user.name).toBe("Mixed Case")
      expect(user.avatar_url).toBeNull()
      expect(user.created_at).toMatch(TIMESTAMP)
      expect(user.updated_at).toBe(user.created_at)
    },
    CLI_TIMEOUT
  )

  test(
    "a password is accepted and never printed",
    async () => {
      const { stdout, code } = await cli(
        "users",
        "create",
        "--email",
        uniqueEmail("pw"),
        "--name",
        "Pw",
        "--password",
        "correct horse battery"
      )
      expect(code).toBe(0)
      expect(stdout).not.toContain("correct horse battery")
      expect(stdout).not.toContain("password")
      expect(stdout).not.toContain("argon2")
    },
    CLI_TIMEOUT
  )

  test(
    "a duplicate email (any case) is refused with a clear message",
    async () => {
      const email = uniqueEmail("dup")
      await ok("users", "create", "--email", email, "--name", "First")
      const stderr = await fails("users", "create", "--email", email.toUpperCase(), "--name", "Second")
      expect(stderr).toContain("already exists")
      expect(stderr).toContain(email)
    },
    CLI_TIMEOUT
  )

  test(
    "missing --email prints the usage",
    async () => {
      const stderr = await fails("users", "create", "--name", "Nobody")
      expect(stderr).toContain("--email")
      expect(stderr).toContain("usage")
    },
    CLI_TIMEOUT
  )

  test(
    "an invalid email, an empty name or a short password is refused",
    async () => {
      expect(await fails("users", "create", "--email", "not-an-email", "--name", "X")).toContain("email")
      expect(await fails("users", "create", "--email", uniqueEmail("noname"), "--name", "   ")).toContain("name")
      expect(
        await fails("users", "create", "--email", uniqueEmail("short"), "--name", "S", "--password", "short")
      ).toContain("password")
    },
    CLI_TIMEOUT
  )

  test(
    "unknown flags and a flag without a value are usage errors",
    async () => {
      expect(await fails("users", "create", "--email", uniqueEmail("x"), "--name", "X", "--admin", "yes")).toContain(
        "--admin"
      )
      expect(await fails("users", "create", "--email", uniqueEmail("x"), "--name")).toContain("usage")
    },
    CLI_TIMEOUT
  )
})

describe("api-keys create", () => {
  test(
    "prints the key record with the key; unknown scope or unknown user is refused",
    async () => {
      const user = await setup.account({ name: "Keys" })
      const key = await ok("api-keys", "create", "--user", user.id, "--name", "ci", "--scopes", "read,projects:write")
      expect(key).toMatchObject({
        name: "ci",
        scopes: ["read", "projects:write"],
        status: "active",
        expires_at: null,
        last_used_at: null,
        revoked_at: null
      })
      expect(key.id).toMatch(/^key_/)
      expect(key.key).toMatch(/^pcs_[0-9A-Za-z]{40}$/)
      expect(key.prefix).toBe(key.key.slice(0, 12))

      const [unknownScope, unknownUser, badExpiry] = await Promise.all([
        fails("api-keys", "create", "--user", user.id, "--name", "ci", "--scopes", "read,admin"),
        fails("api-keys", "create", "--user", "usr_01jd3xkq8w0000000000000000", "--name", "ci", "--scopes", "read"),
        fails("api-keys", "create", "--user", user.id, "--name", "ci", "--scopes", "read", "--expires-at", "soon")
      ])
      expect(unknownScope).toContain("scopes")
      expect(unknownUser).toContain("usr_01jd3xkq8w0000000000000000")
      expect(badExpiry).toContain("expires-at")
    },
    CLI_TIMEOUT
  )

  test(
    "--expires-at in the future is accepted; in the past refused",
    async () => {
      const user = await setup.account({ name: "Exp" })
      const [future, past] = await Promise.all([
        cli("api-keys", "create", "--user", user.id, "--name", "f", "--scopes", "read", "--expires-at", "2099-01-01"),
        cli(
          "api-keys",
          "create",
          "--user",
          user.id,
          "--name",
          "p",
          "--scopes",
          "read",
          "--expires-at",
          "2020-01-01T00:00:00Z"
        )
      ])
      expect(future.code).toBe(0)
      expect(JSON.parse(future.stdout).data.expires_at).toBe("2099-01-01T00:00:00.000Z")
      expect(past.code).not.toBe(0)
      expect(past.stdout.trim()).toBe("")
      expect(past.stderr).toContain("future")
    },
    CLI_TIMEOUT
  )
})

describe("teams", () => {
  test(
    "create and add-member print records; adding twice is a conflict",
    async () => {
      const [owner, member] = await Promise.all([setup.account({ name: "Owner" }), setup.account({ name: "Member" })])
      const team = await ok("teams", "create", "--name", " Platform ", "--owner", owner.id)
      expect(Object.keys(team).sort()).toEqual(["created_at", "id", "name"])
      expect(team.id).toMatch(/^team_[0-7][0-9a-hjkmnp-tv-z]{25}$/)
      expect(team.name).toBe("Platform")
      expect(team.created_at).toMatch(TIMESTAMP)

      const added = await ok("teams", "add-member", "--team", team.id, "--user", member.id, "--role", "admin")
      expect(added).toMatchObject({
        user_id: member.id,
        name: "Member",
        email: member.email,
        avatar_url: null,
        role: "admin"
      })
      expect(added.joined_at).toMatch(TIMESTAMP)

      const [again, owner2, badRole, noTeam] = await Promise.all([
        fails("teams", "add-member", "--team", team.id, "--user", member.id),
        fails("teams", "add-member", "--team", team.id, "--user", owner.id),
        fails("teams", "add-member", "--team", team.id, "--user", member.id, "--role", "boss"),
        fails("teams", "add-member", "--team", "team_01jd3xkq8w0000000000000000", "--user", member.id)
      ])
      expect(again).toContain("already a member")
      expect(owner2).toContain("already a member")
      expect(badRole).toContain("role")
      expect(noTeam).toContain("team_01jd3xkq8w0000000000000000")
    },
    CLI_TIMEOUT
  )

  test(
    "teams create with an unknown owner or without a name is refused",
    async () => {
      const [unknownOwner, noName] = await Promise.all([
        fails("teams", "create", "--name", "Ghost", "--owner", "usr_01jd3xkq8w0000000000000000"),
        fails("teams", "create", "--owner", "usr_01jd3xkq8w0000000000000000")
      ])
      expect(unknownOwner).toContain("usr_01jd3xkq8w0000000000000000")
      expect(noName).toContain("--name")
    },
    CLI_TIMEOUT
  )
})

describe("usage", () => {
  test(
    "an unknown command exits non-zero with the usage",
    async () => {
      const [unknown, none, half] = await Promise.all([fails("projects", "destroy"), fails(), fails("users")])
      expect(unknown).toContain("unknown command")
      expect(unknown).toContain("usage")
      expect(none).toContain("usage")
      expect(half).toContain("usage")
    },
    CLI_TIMEOUT
  )
})
