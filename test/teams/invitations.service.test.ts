/**
 * Invitations name what they are for: every answer carries `team_name` and `invited_by_name` (the invitee cannot
 * read the team), and the messages about a team or a user name it, not its id.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import type { ListQuery } from "../../src/Domain/Lists.ts"
import { Invitations } from "../../src/Teams/Invitations.ts"
import { Teams } from "../../src/Teams/Teams.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { onSelectedEngine, principalOf, type ServiceHarness } from "../support/services.ts"

// The engine DATABASE_URL selects: on PostgreSQL a failed statement ends what a transaction can read, so the
// messages of conflicts found by a failed insert must be built before it.
let harness: ServiceHarness<Invitations | Teams | Users>
beforeAll(async () => {
  harness = await onSelectedEngine(Layer.mergeAll(Invitations.Default, Teams.Default, Users.Default))
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

const query: ListQuery<"created_at", never> = { page: 1, per_page: 100, sort: "created_at", order: "desc" }

const person = (name: string) =>
  harness.run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail(name.toLowerCase()), name })))

test("every invitation answer carries the team's and the inviter's names", async () => {
  const [olive, ivan, dora] = await Promise.all([person("Olive"), person("Ivan"), person("Dora")])
  const team = await harness.run(
    Effect.flatMap(Teams, (teams) => teams.create({ name: "Platform", ownerId: olive.id }))
  )
  const names = { team_name: "Platform", invited_by_name: "Olive" }

  const created = await harness.run(
    Effect.flatMap(Invitations, (invitations) =>
      invitations.create(principalOf(olive), team.id, { email: ivan.email, role: "member" })
    )
  )
  expect(created).toMatchObject({ ...names, team_id: team.id, invited_by: olive.id, status: "pending" })

  const forTeam = await harness.run(
    Effect.flatMap(Invitations, (invitations) => invitations.listForTeam(principalOf(olive), team.id, query))
  )
  expect(forTeam.items.map((item) => [item.id, item.team_name, item.invited_by_name])).toEqual([
    [created.id, "Platform", "Olive"]
  ])

  // The invitee is not a member: their own list is how they learn the team's name and who invited them.
  const mine = await harness.run(
    Effect.flatMap(Invitations, (invitations) => invitations.listMine(principalOf(ivan), query))
  )
  expect(mine.items).toEqual([created])

  const declined = await harness.run(
    Effect.flatMap(Invitations, (invitations) => invitations.decline(principalOf(ivan), created.id))
  )
  expect(declined).toMatchObject({ ...names, id: created.id, status: "declined" })

  // A renamed team: the invitation names it as it is now.
  const second = await harness.run(
    Effect.flatMap(Invitations, (invitations) =>
      invitations.create(principalOf(olive), team.id, { email: dora.email, role: "admin" })
    )
  )
  await harness.run(Effect.flatMap(Teams, (teams) => teams.rename(principalOf(olive), team.id, "Platform Core")))
  const doras = await harness.run(
    Effect.flatMap(Invitations, (invitations) => invitations.listMine(principalOf(dora), query))
  )
  expect(doras.items.map((item) => [item.id, item.team_name, item.invited_by_name])).toEqual([
    [second.id, "Platform Core", "Olive"]
  ])
})

test("messages about a team or a user name them, not their ids", async () => {
  const [owen, mia, ian] = await Promise.all([person("Owen"), person("Mia"), person("Ian")])
  const team = await harness.run(Effect.flatMap(Teams, (teams) => teams.create({ name: "Design", ownerId: owen.id })))
  await harness.run(
    Effect.flatMap(Teams, (teams) => teams.addMember({ teamId: team.id, userId: mia.id, role: "member" }))
  )

  const messageOf = async <A, E extends { readonly message: string }>(
    effect: Effect.Effect<A, E, Invitations | Teams | Users>
  ) => {
    const error = await harness.fail(effect)
    expect(error.message).not.toContain(team.id)
    expect(error.message).not.toMatch(/usr_/)
    return error.message
  }

  // The sole owner leaving, or being made a member.
  expect(
    await messageOf(Effect.flatMap(Teams, (teams) => teams.removeMember(principalOf(owen), team.id, owen.id)))
  ).toBe("Team Design must keep at least one owner; make someone else owner first")
  expect(
    await messageOf(Effect.flatMap(Teams, (teams) => teams.setRole(principalOf(owen), team.id, owen.id, "member")))
  ).toContain("Team Design must keep at least one owner")
  // Adding a member twice.
  expect(
    await messageOf(
      Effect.flatMap(Teams, (teams) => teams.addMember({ teamId: team.id, userId: mia.id, role: "member" }))
    )
  ).toBe("Mia is already a member of team Design")
  // Inviting a member, inviting twice, answering a closed invitation.
  expect(
    await messageOf(
      Effect.flatMap(Invitations, (invitations) =>
        invitations.create(principalOf(owen), team.id, { email: mia.email, role: "member" })
      )
    )
  ).toBe(`${mia.email} is already a member of team Design`)
  const invitation = await harness.run(
    Effect.flatMap(Invitations, (invitations) =>
      invitations.create(principalOf(owen), team.id, { email: ian.email, role: "member" })
    )
  )
  expect(
    await messageOf(
      Effect.flatMap(Invitations, (invitations) =>
        invitations.create(principalOf(owen), team.id, { email: ian.email, role: "member" })
      )
    )
  ).toBe(`${ian.email} already has a pending invitation to team Design`)
  await harness.run(Effect.flatMap(Invitations, (invitations) => invitations.decline(principalOf(ian), invitation.id)))
  expect(
    await messageOf(Effect.flatMap(Invitations, (invitations) => invitations.accept(principalOf(ian), invitation.id)))
  ).toBe(`The invitation of ${ian.email} to team Design is declined, no longer pending`)
  // Deleting a user who still belongs to a team.
  expect(await messageOf(Effect.flatMap(Users, (users) => users.remove(mia.id)))).toBe(
    `User Mia (${mia.email}) still belongs to 1 team (leave them first)`
  )
})
