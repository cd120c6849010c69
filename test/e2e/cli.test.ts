import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Option } from "effect"
import { Users } from "../../src/Users/Users.ts"
import { runCliInProcess } from "../support/cli.ts"
import { type Fixtures, fixtures } from "../support/fixtures.ts"
import { eventually } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { startReceiver } from "../support/receiver.ts"
import { type CliOptions, freshDatabaseUrl, runCli } from "../support/server.ts"

const ROOT = new URL("../..", import.meta.url).pathname

/** One database shared by the tests below (migrated first); `migrate` gets its own. */
let databaseUrl: string
/**
 * Users made in this process (the service's own `Users.create`, as `users create` runs it) for tests whose subject
 * is another command: a CLI process costs about a second. `users create` itself is tested through the CLI below.
 */
let made: Fixtures

beforeAll(async () => {
  databaseUrl = await freshDatabaseUrl()
  const migrated = await runCliInProcess(databaseUrl, ["migrate"])
  if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`)
  made = fixtures(databaseUrl)
}, 60_000)
afterAll(async () => {
  await made?.dispose()
}, 20_000)

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const uniqueEmail = (tag: string) => `${tag}.${Math.random().toString(36).slice(2, 10)}@example.com`

/**
 * The command's rules (flags, output, errors, exit statuses) run in this process: `cli(argv)` of src/cli.ts, the
 * code the process runs, on the same database. `withStdin` gives it standard input, and no terminal.
 */
const cli = (...args: Array<string>) => runCliInProcess(databaseUrl, args)
const withStdin = (args: ReadonlyArray<string>, stdin?: string) => runCliInProcess(databaseUrl, args, { stdin })

/**
 * A process, `bun src/cli.ts …`, for what only a process shows: its own stdin read (`stdin` piped in), no terminal,
 * the exit status a shell sees; `viaScript`: as a person types it, `bun run cli …` (the package script).
 */
const cliProcess = (args: ReadonlyArray<string>, options: CliOptions = {}) => runCli(databaseUrl, args, options)

/** Whether `password` signs the user with this email in (the stored argon2id hash verifies it). */
const passwordWorks = async (email: string, password: string) => {
  const credentials = await made.run(Effect.flatMap(Users, (users) => users.findCredentials(email)))
  const hash = Option.getOrNull(Option.flatMapNullable(credentials, (found) => found.password_hash))
  return hash !== null && (await Bun.password.verify(password, hash))
}

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
  test("applies the migrations once; a second run applies none", async () => {
    const fresh = await freshDatabaseUrl()
    const first = await runCliInProcess(fresh, ["migrate"])
    expect(first.code).toBe(0)
    const applied = JSON.parse(first.stdout).data
    expect(Array.isArray(applied)).toBe(true)
    expect(applied.length).toBeGreaterThan(0)
    for (const migration of applied) {
      expect(typeof migration.id).toBe("number")
      expect(typeof migration.name).toBe("string")
    }
    expect(applied[0]).toEqual({ id: 1, name: "foundation" })
    const second = await runCliInProcess(fresh, ["migrate"])
    expect(second.code).toBe(0)
    expect(JSON.parse(second.stdout)).toEqual({ data: [] })
  }, 60_000)
})

describe("users create", () => {
  test("prints the user record, email lower-cased and trimmed", async () => {
    const email = uniqueEmail("Mixed.Case")
    const user = await ok("users", "create", "--email", `  ${email.toUpperCase()} `, "--name", "Mixed Case")
    expect(Object.keys(user).sort()).toEqual(["avatar_url", "created_at", "email", "id", "name", "updated_at"])
    expect(user.id).toMatch(/^usr_[0-7][0-9a-hjkmnp-tv-z]{25}$/)
    expect(user.email).toBe(email.toLowerCase())
    expect(user.name).toBe("Mixed Case")
    expect(user.avatar_url).toBeNull()
    expect(user.created_at).toMatch(TIMESTAMP)
    expect(user.updated_at).toBe(user.created_at)
  }, 60_000)

  test("--password-stdin: the password's first line is stored (it signs in) and never printed", async () => {
    const email = uniqueEmail("pw")
    const { stdout, stderr, code } = await cliProcess(
      ["users", "create", "--email", email, "--name", "Pw", "--password-stdin"],
      { stdin: "correct horse battery\nignored second line\n" }
    )
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    expect(stdout).not.toContain("correct horse battery")
    expect(stdout).not.toContain("password")
    expect(stdout).not.toContain("argon2")
    expect(await passwordWorks(email, "correct horse battery")).toBe(true)
    expect(await passwordWorks(email, "correct horse battery\n")).toBe(false)
  }, 60_000)

  test("without a password flag and no terminal, users create makes a user without a password", async () => {
    const email = uniqueEmail("nopw")
    const run = await withStdin(["users", "create", "--email", email, "--name", "No Pw"])
    expect(run.code).toBe(0)
    const credentials = await made.run(Effect.flatMap(Users, (users) => users.findCredentials(email)))
    expect(Option.map(credentials, (found) => found.password_hash)).toEqual(Option.some(null))
  }, 60_000)

  test("--password still works but is not required; --password and --password-stdin together are a usage error", async () => {
    const email = uniqueEmail("pwflag")
    await ok("users", "create", "--email", email, "--name", "Flag", "--password", "correct horse battery")
    expect(await passwordWorks(email, "correct horse battery")).toBe(true)
    const both = await withStdin(
      ["users", "create", "--email", uniqueEmail("both"), "--name", "B", "--password-stdin", "--password", "x"],
      "correct horse battery\n"
    )
    expect(both.code).toBe(2)
    expect(both.stderr).toContain("error: give --password-stdin or --password, not both")
  }, 60_000)

  test("a duplicate email (any case) is refused with a clear message", async () => {
    const email = uniqueEmail("dup")
    await ok("users", "create", "--email", email, "--name", "First")
    const stderr = await fails("users", "create", "--email", email.toUpperCase(), "--name", "Second")
    expect(stderr).toContain("already exists")
    expect(stderr).toContain(email)
  }, 60_000)

  test("missing --email prints the usage", async () => {
    const stderr = await fails("users", "create", "--name", "Nobody")
    expect(stderr).toContain("--email")
    expect(stderr).toContain("usage")
  }, 60_000)

  test("an invalid email, an empty name or a short password is refused", async () => {
    expect(await fails("users", "create", "--email", "not-an-email", "--name", "X")).toContain("email")
    expect(await fails("users", "create", "--email", uniqueEmail("noname"), "--name", "   ")).toContain("name")
    expect(
      await fails("users", "create", "--email", uniqueEmail("short"), "--name", "S", "--password", "short")
    ).toContain("password")
  }, 60_000)

  test("unknown flags and a flag without a value are usage errors", async () => {
    expect(await fails("users", "create", "--email", uniqueEmail("x"), "--name", "X", "--admin", "yes")).toContain(
      "--admin"
    )
    expect(await fails("users", "create", "--email", uniqueEmail("x"), "--name")).toContain("usage")
  }, 60_000)
})

describe("api-keys create", () => {
  test("prints the key record with the key; unknown scope or unknown user is refused", async () => {
    const user = await made.account({ email: uniqueEmail("keys"), name: "Keys" })
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
    expect(unknownScope).toContain('has an unknown scope: "admin"')
    expect(unknownScope).toContain("read, write, projects:read, projects:write, team:manage, billing:read")
    expect(unknownScope).not.toContain("must be a comma-separated list")
    expect(unknownUser).toContain("usr_01jd3xkq8w0000000000000000")
    expect(badExpiry).toContain("expires-at")
  }, 60_000)

  test("--expires-at in the future is accepted; in the past refused", async () => {
    const user = await made.account({ email: uniqueEmail("exp"), name: "Exp" })
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
  }, 60_000)
})

describe("teams", () => {
  test("create and add-member print records; adding twice is a conflict", async () => {
    const [owner, member] = await Promise.all([
      made.account({ email: uniqueEmail("owner"), name: "Owner" }),
      made.account({ email: uniqueEmail("member"), name: "Member" })
    ])
    const team = await ok("teams", "create", "--name", " Platform ", "--owner", owner.id)
    expect(Object.keys(team).sort()).toEqual(["created_at", "id", "name", "role", "updated_at"])
    expect(team.role).toBe("owner")
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
  }, 60_000)

  test("teams create with an unknown owner or without a name is refused", async () => {
    const [unknownOwner, noName] = await Promise.all([
      fails("teams", "create", "--name", "Ghost", "--owner", "usr_01jd3xkq8w0000000000000000"),
      fails("teams", "create", "--owner", "usr_01jd3xkq8w0000000000000000")
    ])
    expect(unknownOwner).toContain("usr_01jd3xkq8w0000000000000000")
    expect(noName).toContain("--name")
  }, 60_000)
})

describe("usage", () => {
  test("an unknown command exits 2 and says where the commands are; no command prints the usage", async () => {
    const [unknown, none, half] = await Promise.all([cli("projects", "destroy"), cli(), cli("users")])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown command: projects destroy")
    expect(unknown.stderr).toContain("`bun run cli --help` lists the commands")
    expect(unknown.stderr).not.toContain("did you mean")
    expect(none.code).toBe(2)
    expect(none.stderr).toContain("usage")
    expect(half.code).toBe(2)
    expect(half.stderr).toContain(
      "the users commands: users create, users list, users delete, users suspend, users reactivate, users set-password"
    )
  }, 60_000)

  test("a mistyped command says which one was meant, not the whole usage", async () => {
    const cases: ReadonlyArray<[ReadonlyArray<string>, string]> = [
      [["teams", "lst"], "did you mean bun run cli teams list?"],
      [["user", "create", "--email", "a@example.com"], "did you mean bun run cli users create?"],
      [["webhook", "disable", "--id", "whk_x"], "did you mean bun run cli webhooks disable?"],
      [["api-key", "revoke"], "did you mean bun run cli api-keys revoke?"],
      [["migrat"], "did you mean bun run cli migrate?"]
    ]
    for (const [argv, suggestion] of cases) {
      const { code, stderr, stdout } = await cli(...argv)
      expect({ argv, code, stdout, suggested: stderr.includes(suggestion) }).toEqual({
        argv,
        code: 2,
        stdout: "",
        suggested: true
      })
      expect(stderr).not.toContain("usage:")
    }
  }, 60_000)
})

describe("teams list", () => {
  test("every team with its number of members and its first owner", async () => {
    const [owner, member] = await Promise.all([
      made.account({ email: uniqueEmail("listed-owner"), name: "Listed Owner" }),
      made.account({ email: uniqueEmail("listed-member"), name: "Listed Member" })
    ])
    const team = await ok("teams", "create", "--name", "Listed", "--owner", owner.id)
    await ok("teams", "add-member", "--team", team.id, "--user", member.id, "--role", "owner")
    const alone = await ok("teams", "create", "--name", "Alone", "--owner-email", member.email)
    const teams: Array<any> = await ok("teams", "list")
    const listed = teams.find((candidate) => candidate.id === team.id)
    expect(listed).toEqual({
      id: team.id,
      name: "Listed",
      created_at: team.created_at,
      members: 2,
      owner: { id: owner.id, email: owner.email }
    })
    expect(teams.find((candidate) => candidate.id === alone.id)).toMatchObject({
      members: 1,
      owner: { id: member.id, email: member.email }
    })
    // Oldest first.
    expect(teams.findIndex((t) => t.id === team.id)).toBeLessThan(teams.findIndex((t) => t.id === alone.id))
  }, 60_000)
})

describe("webhooks list, disable and enable", () => {
  test("--status failed lists the failing ones; a disabled webhook is sent nothing until it is enabled", async () => {
    const receiver = startReceiver()
    receiver.setDefault({ status: 500 }, "/down")
    const server = await startInProcess({
      env: {
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        WEBHOOK_RETRY_DELAYS: "50ms,50ms,50ms,50ms",
        WEBHOOK_POLL_INTERVAL: "100ms"
      }
    })
    try {
      const ann = await server.user({ name: "Ann" })
      const make = async (path: string) => {
        const created = await server.request("/v1/webhooks", {
          method: "POST",
          key: ann.key,
          body: { url: receiver.url(path), events: ["project.created"] }
        })
        expect(created.status).toBe(201)
        return created.body.data.id as string
      }
      const down = await make("/down")
      const up = await make("/up")
      const project = (name: string) => server.request("/v1/projects", { method: "POST", key: ann.key, body: { name } })
      expect((await project("first")).status).toBe(201)
      await receiver.waitFor(5, { path: "/down", timeoutMs: 20_000 })
      await receiver.waitFor(1, { path: "/up" })
      const failed: Array<any> = await eventually(
        async () => {
          const listed: Array<any> = await server.cli("webhooks", "list", "--status", "failed")
          return listed.length > 0 ? listed : undefined
        },
        { what: "the failing webhook to be failed" }
      )
      expect(failed).toEqual([
        {
          id: down,
          owner_email: ann.email,
          url: receiver.url("/down"),
          status: "failed",
          events: ["project.created"],
          failed_at: expect.any(String),
          disabled_at: null,
          created_at: expect.any(String)
        }
      ])
      const all: Array<any> = await server.cli("webhooks", "list")
      expect(all.map((hook) => [hook.id, hook.status])).toEqual([
        [down, "failed"],
        [up, "active"]
      ])

      const disabled = await server.cli("webhooks", "disable", "--id", up)
      const disabledAt = disabled.disabled_at
      expect(disabledAt).toMatch(TIMESTAMP)
      expect(disabled).toMatchObject({ id: up, status: "active" })
      expect((await server.cli<Array<any>>("webhooks", "list", "--status", "disabled")).map((h) => h.id)).toEqual([up])
      const shown = await server.request(`/v1/webhooks/${up}`, { key: ann.key })
      expect(shown.body.data.disabled_at).toBe(disabledAt)

      // While disabled: no delivery is made for it (its log stays at one), though the event is recorded.
      expect((await project("second")).status).toBe(201)
      await receiver.waitFor(6, { path: "/down", timeoutMs: 20_000 })
      const log = await server.request(`/v1/webhooks/${up}/deliveries`, { key: ann.key })
      expect(log.body.meta.total).toBe(1)
      expect(receiver.requests("/up")).toHaveLength(1)

      const enabled = await server.cli("webhooks", "enable", "--id", up)
      expect(enabled).toMatchObject({ id: up, disabled_at: null })
      expect((await project("third")).status).toBe(201)
      const [, third] = await receiver.waitFor(2, { path: "/up" })
      expect(JSON.parse(third!.body).data.name).toBe("third")

      const unknown = await cli("webhooks", "disable", "--id", "whk_01jd3xkq8w0000000000000000")
      expect(unknown.code).toBe(3)
      const badStatus = await cli("webhooks", "list", "--status", "broken")
      expect(badStatus.code).toBe(4)
      expect(badStatus.stderr).toContain("active, failed, disabled")
    } finally {
      await server.stop()
      await receiver.stop()
    }
  }, 90_000)
})

describe("webhooks disable and enable are audited", () => {
  test("each change is a webhook.updated record by the operator in the owner's security log; no change, no record", async () => {
    const server = await startInProcess({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
    try {
      const ann = await server.user({ name: "Ann" })
      const created = await server.request("/v1/webhooks", {
        method: "POST",
        key: ann.key,
        body: { url: "http://127.0.0.1:9/audited", events: ["project.created"] }
      })
      expect(created.status).toBe(201)
      const id: string = created.body.data.id
      const records = async () => {
        const log = await server.request("/v1/users/me/audit-log?action=webhook.updated&per_page=100", {
          key: ann.key
        })
        expect(log.status).toBe(200)
        return (log.body.data as Array<any>).filter((record) => record.target.id === id)
      }

      const disabled = await server.cli("webhooks", "disable", "--id", id)
      expect(disabled.disabled_at).toMatch(TIMESTAMP)
      const [record] = await records()
      expect(record).toMatchObject({
        action: "webhook.updated",
        actor: { type: "operator" },
        credential: null,
        target: { type: "webhook", id },
        target_name: "http://127.0.0.1:9/audited",
        changes: { disabled: [false, true] }
      })
      // Disabling it again changes nothing: the same disabled_at, no second record.
      const again = await server.cli("webhooks", "disable", "--id", id)
      expect(again.disabled_at).toBe(disabled.disabled_at)
      expect(await records()).toHaveLength(1)

      const enabled = await server.cli("webhooks", "enable", "--id", id)
      expect(enabled.disabled_at).toBeNull()
      const latest = await records()
      expect(latest).toHaveLength(2)
      expect(latest[0]).toMatchObject({ actor: { type: "operator" }, changes: { disabled: [true, false] } })
      await server.cli("webhooks", "enable", "--id", id)
      expect(await records()).toHaveLength(2)
    } finally {
      await server.stop()
    }
  }, 60_000)
})

describe("help", () => {
  test("--help, -h and help print the usage on stdout and exit 0", async () => {
    const runs = await Promise.all([cli("--help"), cli("-h"), cli("help")])
    for (const run of runs) {
      expect(run.code).toBe(0)
      expect(run.stderr).toBe("")
      expect(run.stdout).toContain("usage: bun run cli")
      for (const command of [
        "users list",
        "users delete",
        "api-keys revoke",
        "oauth-clients rotate-secret",
        "migrate"
      ]) {
        expect(run.stdout).toContain(command)
      }
      expect(run.stdout).toContain("exit status")
    }
  }, 60_000)

  test("a command's --help (or -h, anywhere) describes its flags on stdout and exits 0", async () => {
    const runs = await Promise.all([
      cli("users", "create", "--help"),
      cli("users", "create", "-h"),
      cli("users", "create", "--email", "x@example.com", "--help")
    ])
    for (const run of runs) {
      expect(run.code).toBe(0)
      expect(run.stderr).toBe("")
      expect(run.stdout).toContain(
        "usage: bun run cli users create --email E --name N [--password-stdin | --password P]"
      )
      expect(run.stdout).toContain("--password-stdin")
      expect(run.stdout).toContain("discouraged")
    }
    const area = await cli("oauth-clients", "--help")
    expect(area.code).toBe(0)
    expect(area.stdout).toContain("oauth-clients rotate-secret --client CLIENT_ID")
  }, 60_000)

  test("no command is a usage error (2) with the usage on stderr (a process: the exit status a shell sees)", async () => {
    const run = await cliProcess([])
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain("usage")
  }, 60_000)
})

describe("flags and exit codes", () => {
  test("--flag=value works like --flag value, including values with = in them", async () => {
    const email = uniqueEmail("equals")
    const user = await ok("users", "create", `--email=${email}`, "--name=A = B")
    expect(user.email).toBe(email)
    expect(user.name).toBe("A = B")
  }, 60_000)

  test("usage errors exit 2; unknown records 3; refused values 4", async () => {
    const user = await ok("users", "create", "--email", uniqueEmail("codes"), "--name", "Codes")
    const runs = await Promise.all([
      cli("projects", "destroy"),
      cli("users", "create", "--name", "No Email"),
      cli("users", "list", "--admin"),
      cli("users", "create", "--email", "a@example.com", "--email", "b@example.com", "--name", "Twice"),
      cli("oauth-clients", "create", "--name", "x", "--redirect-uri", "http://localhost/cb", "--public=yes"),
      cli("users", "delete", "--user", "usr_01jd3xkq8w0000000000000000"),
      cli("api-keys", "revoke", "--key", "key_01jd3xkq8w0000000000000000"),
      cli("oauth-clients", "rotate-secret", "--client", "cli_01jd3xkq8w0000000000000000"),
      cli("users", "create", "--email", "not-an-email", "--name", "X"),
      cli("users", "create", "--email", user.email, "--name", "Duplicate")
    ])
    // Each run's code with its stderr, so that a wrong code shows why in the failure.
    expect(runs.map(({ code, stderr }) => ({ code, stderr }))).toMatchObject(
      [2, 2, 2, 2, 2, 3, 3, 3, 4, 4].map((code) => ({ code }))
    )
    for (const run of runs) {
      expect(run.stdout).toBe("")
      expect(run.stderr).toMatch(/^error: /)
      expect(run.stderr).not.toMatch(/\n\s+at /)
    }
  }, 60_000)

  test("an unreachable database is one line on stderr and exit 1, no stack trace", async () => {
    // A process: the exit status and the one line a shell sees.
    const runs = await Promise.all([
      runCli("postgres://nobody:secret@127.0.0.1:1/none", ["users", "list"]),
      runCli("postgres://nobody:secret@127.0.0.1:1/none", ["migrate"])
    ])
    for (const run of runs) {
      expect(run.code).toBe(1)
      expect(run.stdout).toBe("")
      expect(run.stderr.trim().split("\n")).toHaveLength(1)
      expect(run.stderr).toContain("database")
      expect(run.stderr).toContain("ECONNREFUSED")
      expect(run.stderr).not.toContain("secret")
    }
  }, 60_000)
})

describe("users list and delete", () => {
  test("list shows every user without internal fields; delete removes one and their keys", async () => {
    const user = await ok(
      "users",
      "create",
      "--email",
      uniqueEmail("listed"),
      "--name",
      "Listed",
      "--password",
      "correct horse battery"
    )
    const key = await ok("api-keys", "create", "--user", user.id, "--name", "k", "--scopes", "read")
    const users = await ok("users", "list")
    expect(Array.isArray(users)).toBe(true)
    const listed = users.find((candidate: { id: string }) => candidate.id === user.id)
    expect(listed).toEqual(user)
    expect(JSON.stringify(users)).not.toContain("password")
    expect(JSON.stringify(users)).not.toContain("org_")

    expect(await ok("users", "delete", "--user", user.id)).toEqual({ id: user.id, deleted: true })
    expect((await ok("users", "list")).some((candidate: { id: string }) => candidate.id === user.id)).toBe(false)
    expect((await ok("api-keys", "list")).some((candidate: { id: string }) => candidate.id === key.id)).toBe(false)
    const again = await cli("users", "delete", "--user", user.id)
    expect(again.code).toBe(3)
    expect(again.stderr).toContain(user.id)
  }, 60_000)
})

describe("users delete refuses while deleting would drop an event", () => {
  test("refused (exit 4, saying what is still theirs) while they own a project, belong to a team or started a deployment", async () => {
    const server = await startInProcess({ databaseUrl })
    try {
      const [owner, other] = await Promise.all([
        server.fixtures.account({ email: uniqueEmail("holder"), name: "Holder" }),
        server.fixtures.account({ email: uniqueEmail("coowner"), name: "Co-owner" })
      ])
      const [key, otherKey] = await Promise.all([
        server.fixtures.apiKey(owner.id, { name: "k", scopes: "read,write,team:manage" }),
        server.fixtures.apiKey(other.id, { name: "k", scopes: "read,write" })
      ])
      const created = await server.request("/v1/projects", { method: "POST", key: key.key, body: { name: "Kept" } })
      expect(created.status).toBe(201)
      const projectId = created.body.data.id
      const team = await server.fixtures.team("Held", other.id)
      await server.fixtures.addMember(team.id, owner.id, "member")
      // The user deploys a project of someone else's (a team project they may change).
      const shared = await server.request("/v1/projects", {
        method: "POST",
        key: otherKey.key,
        body: { name: "Shared", visibility: "team", team_id: team.id }
      })
      expect(shared.status).toBe(201)
      const deployed = await server.request(`/v1/projects/${shared.body.data.id}/deployments`, {
        method: "POST",
        key: key.key,
        body: { ref: "main" }
      })
      expect(deployed.status).toBe(201)

      const all = await cli("users", "delete", "--user", owner.id)
      expect(all.code).toBe(4)
      expect(all.stdout.trim()).toBe("")
      expect(all.stderr).toContain(`User Holder (${owner.email}) still`)
      expect(all.stderr).toContain("owns 1 project")
      expect(all.stderr).toContain("belongs to 1 team")
      expect(all.stderr).toContain("started 1 deployment")
      // Nothing was deleted: the user, their project, their membership and the deployment are all still there.
      expect((await ok("users", "list")).some((candidate: { id: string }) => candidate.id === owner.id)).toBe(true)
      expect((await server.request(`/v1/projects/${projectId}`, { key: key.key })).status).toBe(200)
      const members = await server.request(`/v1/teams/${team.id}/members`, { key: key.key })
      expect(members.body.data.map((member: { user_id: string }) => member.user_id)).toContain(owner.id)

      // Leaving the team (member.removed) and deleting the projects (project.deleted, deployments with them).
      const left = await server.request(`/v1/teams/${team.id}/members/${owner.id}`, { method: "DELETE", key: key.key })
      expect(left.status).toBe(204)
      const remaining = await cli("users", "delete", "--user", owner.id)
      expect(remaining.code).toBe(4)
      expect(remaining.stderr).toContain("owns 1 project")
      expect(remaining.stderr).not.toContain("team")
      for (const [id, withKey] of [
        [projectId, key.key],
        [shared.body.data.id, otherKey.key]
      ] as const) {
        expect((await server.request(`/v1/projects/${id}`, { method: "DELETE", key: withKey })).status).toBe(204)
      }
      expect(await ok("users", "delete", "--user", owner.id)).toEqual({ id: owner.id, deleted: true })
      expect((await ok("api-keys", "list")).some((candidate: { id: string }) => candidate.id === key.id)).toBe(false)
    } finally {
      await server.stop()
    }
  }, 60_000)
})

describe("api-keys list and revoke", () => {
  test("list never shows a key; --user filters; revoke is idempotent", async () => {
    const [ann, bob] = await Promise.all([
      made.account({ email: uniqueEmail("ann"), name: "Ann" }),
      made.account({ email: uniqueEmail("bob"), name: "Bob" })
    ])
    const annKey = await ok("api-keys", "create", "--user", ann.id, "--name", "ann's", "--scopes", "read,write")
    await ok("api-keys", "create", "--user", bob.id, "--name", "bob's", "--scopes", "read")
    const annKeys = await ok("api-keys", "list", "--user", ann.id)
    expect(annKeys).toHaveLength(1)
    const { key: secret, ...record } = annKey
    expect(annKeys[0]).toEqual({ ...record, user_id: ann.id })
    const all = await ok("api-keys", "list")
    expect(JSON.stringify(all)).not.toContain(secret)
    expect(all.filter((key: { user_id: string }) => key.user_id === ann.id || key.user_id === bob.id)).toHaveLength(2)

    const revoked = await ok("api-keys", "revoke", "--key", annKey.id)
    expect(revoked.status).toBe("revoked")
    expect(revoked.revoked_at).toMatch(TIMESTAMP)
    const again = await ok("api-keys", "revoke", "--key", annKey.id)
    expect(again.revoked_at).toBe(revoked.revoked_at)
    const unknownUser = await cli("api-keys", "list", "--user", "usr_01jd3xkq8w0000000000000000")
    expect(unknownUser.code).toBe(3)
  }, 60_000)
})

describe("oauth-clients list, rotate-secret and delete", () => {
  test("a rotated secret is shown once and replaces the old one at the token endpoint; delete removes the client", async () => {
    const server = await startInProcess({ databaseUrl })
    try {
      const created = await ok(
        "oauth-clients",
        "create",
        "--name",
        "Rotating",
        "--redirect-uri",
        "http://localhost:8080/cb"
      )
      const listed = await ok("oauth-clients", "list")
      const entry = listed.find((client: { client_id: string }) => client.client_id === created.client_id)
      expect(entry).toEqual({
        client_id: created.client_id,
        name: "Rotating",
        redirect_uris: ["http://localhost:8080/cb"],
        public: false,
        created_at: expect.stringMatching(TIMESTAMP)
      })
      expect(JSON.stringify(listed)).not.toContain(created.client_secret)

      // RFC 7009: revoking an unknown token answers 200 once the client has authenticated, 401 otherwise.
      const authenticates = async (secret: string) =>
        (
          await server.request("/oauth/revoke", {
            method: "POST",
            rawBody: new URLSearchParams({
              token: "pcr_unknown",
              client_id: created.client_id,
              client_secret: secret
            }).toString(),
            headers: { "content-type": "application/x-www-form-urlencoded" }
          })
        ).status
      expect(await authenticates(created.client_secret)).toBe(200)

      const rotated = await ok("oauth-clients", "rotate-secret", "--client", created.client_id)
      expect(rotated.client_secret).toMatch(/^pcc_[0-9A-Za-z]{40}$/)
      expect(rotated.client_secret).not.toBe(created.client_secret)
      expect(await authenticates(created.client_secret)).toBe(401)
      expect(await authenticates(rotated.client_secret)).toBe(200)

      const publicClient = await ok(
        "oauth-clients",
        "create",
        "--name",
        "SPA",
        "--redirect-uri",
        "http://localhost:8080/cb",
        "--public"
      )
      const noSecret = await cli("oauth-clients", "rotate-secret", "--client", publicClient.client_id)
      expect(noSecret.code).toBe(4)
      expect(noSecret.stderr).toContain("public")

      expect(await ok("oauth-clients", "delete", "--client", created.client_id)).toEqual({
        client_id: created.client_id,
        deleted: true
      })
      expect(await authenticates(rotated.client_secret)).toBe(401)
      expect((await cli("oauth-clients", "delete", "--client", created.client_id)).code).toBe(3)
    } finally {
      await server.stop()
    }
  }, 60_000)
})

test("docs/cli.md's table of operator commands lists every command as --help shows it", async () => {
  const readme = (await Bun.file(new URL("../../docs/cli.md", import.meta.url)).text()).replace(/\\\|/g, "|")
  const help = await cli("--help")
  const lines = help.stdout
    .split("\n")
    .filter((line) => line.startsWith("  "))
    .map((line) => line.trim())
  expect(lines.length).toBeGreaterThan(10)
  for (const line of lines)
    expect({ line, documented: readme.includes(`| \`${line}\` |`) }).toEqual({ line, documented: true })
}, 60_000)

describe("--email names a user wherever --user does", () => {
  test("users set-password, api-keys create and list, teams create and add-member, users delete", async () => {
    const [ann, bob] = await Promise.all([
      made.account({ email: uniqueEmail("ann.email"), name: "Ann" }),
      made.account({ email: uniqueEmail("bob.email"), name: "Bob" })
    ])
    // Any case and surrounding spaces, as users create stores it.
    const set = await withStdin(
      ["users", "set-password", "--email", ` ${ann.email.toUpperCase()} `, "--password-stdin"],
      "ann's new password\n"
    )
    expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: "" })
    expect(JSON.parse(set.stdout).data.id).toBe(ann.id)
    expect(await passwordWorks(ann.email, "ann's new password")).toBe(true)

    const key = await ok("api-keys", "create", "--email", ann.email, "--name", "laptop", "--scopes", "read,write")
    expect(key.key).toMatch(/^pcs_/)
    const listed = await ok("api-keys", "list", "--email", ann.email)
    expect(listed.map((entry: { id: string; user_id: string }) => [entry.id, entry.user_id])).toEqual([
      [key.id, ann.id]
    ])

    const team = await ok("teams", "create", "--name", "Email Team", "--owner-email", ann.email)
    expect(team.role).toBe("owner")
    const added = await ok("teams", "add-member", "--team", team.id, "--email", bob.email)
    expect(added).toMatchObject({ user_id: bob.id, role: "member" })

    const [both, neither, unknown, ownerBoth] = await Promise.all([
      cli("api-keys", "create", "--email", ann.email, "--user", ann.id, "--name", "k", "--scopes", "read"),
      cli("api-keys", "create", "--name", "k", "--scopes", "read"),
      cli("users", "delete", "--email", "nobody.here@example.com"),
      cli("teams", "create", "--name", "T", "--owner-email", ann.email, "--owner", ann.id)
    ])
    expect([both.code, neither.code, unknown.code, ownerBoth.code]).toEqual([2, 2, 3, 2])
    expect(both.stderr).toContain("error: give --email or --user, not both")
    expect(neither.stderr).toContain("error: --email or --user is required")
    expect(unknown.stderr).toBe("error: No user with email nobody.here@example.com\n")
    expect(ownerBoth.stderr).toContain("--owner-email or --owner")

    const loner = await made.account({ email: uniqueEmail("loner"), name: "Loner" })
    expect(await ok("users", "delete", "--email", loner.email)).toEqual({ id: loner.id, deleted: true })
  }, 60_000)
})

describe("passwords are never required on the command line", () => {
  test("users set-password without a terminal or --password-stdin is a usage error that says how", async () => {
    const user = await made.account({ email: uniqueEmail("notty"), name: "No TTY" })
    const run = await cliProcess(["users", "set-password", "--email", user.email])
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain("--password-stdin")
  }, 60_000)

  test("on a terminal it asks twice without echoing what is typed", async () => {
    const user = await made.account({ email: uniqueEmail("tty"), name: "TTY" })
    // `script` runs the command on a pseudo-terminal; what the terminal shows comes back on its stdout.
    const proc = Bun.spawn(["script", "-qec", `bun src/cli.ts users set-password --email ${user.email}`, "/dev/null"], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" },
      stdin: "pipe",
      stdout: "pipe"
    })
    let shown = ""
    const reader = proc.stdout.getReader()
    const decoder = new TextDecoder()
    const until = async (text: string) => {
      while (!shown.includes(text)) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`the terminal closed before ${JSON.stringify(text)}: ${shown}`)
        shown += decoder.decode(value)
      }
    }
    // Each answer is typed only once the question is on screen: the prompt turns echo off before it asks.
    await until("Password: ")
    proc.stdin.write("typed secret 1\r")
    await proc.stdin.flush()
    await until("again: ")
    proc.stdin.write("typed secret 1\r")
    await proc.stdin.flush()
    await proc.stdin.end()
    expect(await proc.exited).toBe(0)
    while (true) {
      const { value, done } = await reader.read()
      if (done) break
      shown += decoder.decode(value)
    }
    expect(shown).not.toContain("typed secret")
    expect(shown).toContain(`"email": "${user.email}"`)
    expect(await passwordWorks(user.email, "typed secret 1")).toBe(true)
  }, 60_000)
})

describe("bun run cli prints only the command's own output", () => {
  test("no runner line on stdout or stderr, on success, --help and failure", async () => {
    const [list, help, missing] = await Promise.all([
      cliProcess(["users", "list"], { viaScript: true }),
      cliProcess(["--help"], { viaScript: true }),
      cliProcess(["users", "delete", "--email", "nobody.there@example.com"], { viaScript: true })
    ])
    expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: "" })
    expect(Array.isArray(JSON.parse(list.stdout).data)).toBe(true)
    expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: "" })
    expect(help.stdout.startsWith("usage: bun run cli")).toBe(true)
    expect(missing).toEqual({ code: 3, stdout: "", stderr: "error: No user with email nobody.there@example.com\n" })
  }, 60_000)
})
