-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The recovery rider's probe, in its place on a draining engine's claims: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- Reported in the answer:
'recoverable', (exists (
      with recursive leasing(owner) as (
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' order by j.lease_owner limit 1)
        union all
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' and j.lease_owner > l.owner order by j.lease_owner limit 1)
        from leasing l where l.owner is not null
      )
      select 1 from leasing l where l.owner is not null and l.owner <> $1
        and not exists (select 1 from akadze.owners o where o.owner = l.owner and o.expires_at >= now())
        and exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = l.owner and j.lease_expires_at is null))
      or (select j.lease_expires_at from akadze.jobs j where j.state = 'running' and j.lease_expires_at is not null
        and j.lease_expires_at < now() order by j.lease_expires_at limit 1) is not null)
