CREATE TABLE "akadze"."child_waits" (
	"child_id" bigint PRIMARY KEY NOT NULL,
	"parent_id" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "child_waits_parent_idx" ON "akadze"."child_waits" USING btree ("parent_id");