CREATE TABLE "akadze"."invocation_slots" (
	"scope" text NOT NULL,
	"slot" integer NOT NULL,
	"holder" text,
	"chain" text,
	"taken_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "invocation_slots_scope_slot_pk" PRIMARY KEY("scope","slot")
);
--> statement-breakpoint
ALTER TABLE "akadze"."workers" ADD COLUMN "started_by" text;