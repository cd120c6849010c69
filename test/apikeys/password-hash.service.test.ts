// engine-independent: the services over SQLite in memory (inMemory), whichever engine the run is on
/**
 * Passwords are stored as argon2id hashes of two passes over `PASSWORD_HASH_MEMORY_KIB` of memory (64 MiB unless
 * set; docs/configuration.md): a user's first password and a new one alike (`SignIn`'s stand-in hash for an unknown
 * email is made by the same `Users.hashPassword`). A hash made at another cost still verifies (it says its own). The
 * rest of the suite hashes at OWASP's minimum, 19 MiB (test/support/secrets.ts); these tests give each setting a
 * provider of its own, over the real `Users` and `SignIn` layers on SQLite in memory.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { SignIn } from "../../src/Auth/SignIn.ts"
import { RateLimitLive } from "../../src/RateLimit/RateLimit.ts"
import { UsersRepo } from "../../src/Users/Repo.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { inMemory, type ServiceHarness } from "../support/services.ts"

const harnesses: Array<ServiceHarness<Users | SignIn | UsersRepo>> = []
/** `Users` and `SignIn` with `PASSWORD_HASH_MEMORY_KIB` as given (unset: `undefined`), nothing else from the env. */
const withSetting = (memory: string | undefined) => {
  const settings = new Map(memory === undefined ? [] : [["PASSWORD_HASH_MEMORY_KIB", memory]])
  const harness = inMemory(
    Layer.mergeAll(SignIn.Default, Users.Default, UsersRepo.Default).pipe(
      Layer.provide(RateLimitLive),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(settings)))
    )
  )
  harnesses.push(harness)
  return harness
}
afterAll(async () => {
  for (const harness of harnesses) await harness.dispose()
}, 20_000)

const PASSWORD = "correct horse battery"

/** Creates a user with `PASSWORD`, sets them `newPassword`, and answers the stored hash after each. */
const hashesOf = (harness: ServiceHarness<Users | SignIn | UsersRepo>, newPassword: string) =>
  harness.run(
    Effect.gen(function* () {
      const users = yield* Users
      const email = uniqueEmail()
      const user = yield* users.create({ email, name: "Hashed", password: PASSWORD })
      const first = yield* users.findCredentials(email)
      yield* users.setPassword(user.id, newPassword)
      const second = yield* users.findCredentials(email)
      return [first, second].map((found) => Option.getOrThrow(found).password_hash ?? "")
    })
  )

describe("password hashes", () => {
  test("are argon2id over 64 MiB, two passes, unless set", async () => {
    const hashes = await hashesOf(withSetting(undefined), "another good one")
    for (const hash of hashes) expect(hash).toStartWith("$argon2id$v=19$m=65536,t=2,p=1$")
  }, 30_000)

  test("use PASSWORD_HASH_MEMORY_KIB, for a first password and a new one; sign-in verifies them", async () => {
    const harness = withSetting("19456")
    const hashes = await hashesOf(harness, "another good one")
    for (const hash of hashes) expect(hash).toStartWith("$argon2id$v=19$m=19456,t=2,p=1$")
    const signedIn = await harness.run(
      Effect.gen(function* () {
        const users = yield* Users
        const email = uniqueEmail()
        const user = yield* users.create({ email, name: "Signs in", password: PASSWORD })
        const signIn = yield* SignIn
        const wrong = yield* Effect.flip(signIn.verify(email, "not the password"))
        expect(wrong._tag).toBe("SignInFailed")
        return { expected: user.id, ...(yield* signIn.verify(email, PASSWORD)) }
      })
    )
    expect(signedIn.id).toBe(signedIn.expected)
  }, 30_000)

  test("made at another cost still verify: a hash names its own", async () => {
    const harness = withSetting("19456")
    const user = await harness.run(
      Effect.gen(function* () {
        const users = yield* Users
        const email = uniqueEmail()
        const created = yield* users.create({ email, name: "Older hash", password: "not the one kept" })
        // What a service set to 64 MiB stored before the setting changed.
        const older = yield* Effect.promise(() => Bun.password.hash(PASSWORD, { algorithm: "argon2id" }))
        expect(older).toStartWith("$argon2id$v=19$m=65536,")
        yield* Effect.orDie((yield* UsersRepo).setPasswordHash(created.id, older, new Date().toISOString()))
        return { id: created.id, email }
      })
    )
    const signedIn = await harness.run(Effect.flatMap(SignIn, (signIn) => signIn.verify(user.email, PASSWORD)))
    expect(signedIn.id).toBe(user.id)
  }, 30_000)

  test("below OWASP's 19 MiB, or not a number, the service refuses to start", async () => {
    for (const memory of ["19455", "1024", "64MiB"]) {
      const harness = withSetting(memory)
      const failure = await harness.run(Effect.void).then(
        () => "started",
        (error: unknown) => String(error)
      )
      expect(failure).toContain("PASSWORD_HASH_MEMORY_KIB")
    }
  }, 30_000)
})
