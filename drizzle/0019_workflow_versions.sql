-- Workflow steps gain two kinds of journal entry: 'patch' (a step.patched marker) and 'version' (the workflow
-- version a run started on). The new check allows more than the old one, so every stored row already passes
-- it: NOT VALID skips the scan of akadze.steps that would hold its lock while running workers wait to save steps.
ALTER TABLE "akadze"."steps" DROP CONSTRAINT "steps_kind_check";--> statement-breakpoint
ALTER TABLE "akadze"."steps" ADD CONSTRAINT "steps_kind_check" CHECK ("akadze"."steps"."kind" in ('run', 'sleep', 'event', 'jobs', 'patch', 'version')) NOT VALID;
