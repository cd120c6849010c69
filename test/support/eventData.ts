/** Event `data` the outbox accepts (the catalogue's schema for its type), for tests that emit events by hand. */

/** `data` for a `project.created` event: a project record named `name`. */
export const projectData = (name: string) => ({
  id: "proj_01kg7xpz3c5m2q8r4w6y9b1dfe",
  name,
  description: "",
  visibility: "private",
  status: "active",
  owner_id: "usr_01kg7xnv8h2k4m6p8r0t2v4x6z",
  team_id: null,
  created_at: "2026-01-31T12:00:00.000Z",
  updated_at: "2026-01-31T12:00:00.000Z"
})
