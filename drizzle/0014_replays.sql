CREATE TABLE "akadze"."replays" (
	"job_id" bigint PRIMARY KEY NOT NULL,
	"replay_of" bigint NOT NULL
);
