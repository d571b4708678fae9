-- Oracle AI Agent Memory on Oracle AI Database 26ai: the three database identities.
--
-- NOT YET RUN AGAINST A LIVE DATABASE. Every statement follows Oracle's documented grammar
-- (SQL Language Reference 26ai; Oracle Deep Data Security Guide, Release Update 23.26.2) and
-- is checked offline by tests/test_deploy_oracle.py, but no Oracle database was reachable
-- where it was written. Report what fails.
--
-- Run it once per pluggable database, as a named user with the DBA role, with SQLcl or
-- SQL*Plus (it uses their DEFINE / ACCEPT substitution variables):
--
--     sql dba_user@"tcps://db.example.com:2484/memorypdb" @deploy/oracle/bootstrap.sql
--
-- It asks for the three passwords (never echoed, never stored in this file). Re-running it
-- is harmless: CREATE USER IF NOT EXISTS leaves an existing account as it is (its password
-- too), and granting a privilege twice changes nothing.
--
-- The identities (see deploy/oracle/README.md for why three):
--   OAM_POLICY_ADMIN  creates end users, data roles, application identities and data grants,
--                     and makes the store's tables reachable only through data grants.
--                     Owns no tables.
--   OAM_OWNER         owns the memory store's tables, indexes and its purge job. No end user
--                     and no application ever connects as it.
--   OAM_RUNTIME       the gateway's connection pool account: it can log in and attach an
--                     end-user security context, nothing else. Every row it reads or writes,
--                     it reaches as the end user, through the policy administrator's grants.

WHENEVER SQLERROR EXIT SQL.SQLCODE
SET VERIFY OFF

DEFINE oam_policy_admin = OAM_POLICY_ADMIN
DEFINE oam_owner = OAM_OWNER
DEFINE oam_runtime = OAM_RUNTIME
DEFINE oam_tablespace = USERS
DEFINE oam_quota = 10G

ACCEPT oam_policy_admin_password CHAR PROMPT 'Password for the policy administrator: ' HIDE
ACCEPT oam_owner_password CHAR PROMPT 'Password for the schema owner: ' HIDE
ACCEPT oam_runtime_password CHAR PROMPT 'Password for the runtime pool account: ' HIDE

-- 1. The policy administrator ------------------------------------------------------------------
-- Privileges from the Deep Data Security Guide: CREATE / ALTER / DROP END USER (local end
-- users); CREATE / DROP DATA ROLE and GRANT ANY DATA ROLE (data roles); CREATE APPLICATION
-- IDENTITY (11.1); CREATE ANY DATA GRANT, ADMINISTER ANY DATA GRANT and DROP ANY DATA GRANT
-- (data grants live in, and are on tables of, the owner's schema, not the admin's); SET USE
-- DATA GRANTS ONLY (mandatory data grants on the managed tables). The SQL reference allows
-- ADMINISTER ANY DATA GRANT and SET USE DATA GRANTS ONLY at the schema level too; to confine
-- the administrator to the owner's schema use 23ai's schema privileges instead, e.g.
-- GRANT ADMINISTER ANY DATA GRANT ON SCHEMA OAM_OWNER TO OAM_POLICY_ADMIN (not verified live).
CREATE USER IF NOT EXISTS &oam_policy_admin IDENTIFIED BY "&oam_policy_admin_password";
GRANT CREATE SESSION TO &oam_policy_admin;
GRANT CREATE END USER, ALTER END USER, DROP END USER TO &oam_policy_admin;
GRANT CREATE DATA ROLE, DROP DATA ROLE, GRANT ANY DATA ROLE TO &oam_policy_admin;
GRANT CREATE APPLICATION IDENTITY TO &oam_policy_admin;
GRANT CREATE ANY DATA GRANT, ADMINISTER ANY DATA GRANT, DROP ANY DATA GRANT TO &oam_policy_admin;
GRANT SET USE DATA GRANTS ONLY TO &oam_policy_admin;

-- What it reads to list and check what it made (Database Reference 26ai; the views exist from
-- Release Update 23.26.2).
GRANT SELECT ON SYS.DBA_END_USERS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_DATA_ROLES TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_DATA_ROLE_GRANTS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_DATA_GRANTS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_APPLICATION_IDENTITIES TO &oam_policy_admin;
-- ... and what oam-admin reads on Oracle (engines/oracle/admin_sql.py): the store's tables and
-- columns (policies cover the current columns), and the runtime logins' grants (oam-admin check).
GRANT SELECT ON SYS.DBA_TABLES TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_TAB_COLUMNS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_USERS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_SYS_PRIVS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_ROLE_PRIVS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_TAB_PRIVS TO &oam_policy_admin;
GRANT SELECT ON SYS.DBA_OBJECTS TO &oam_policy_admin;
-- ... and which identity provider the database trusts (oam-admin grant --group names it from
-- the IDENTITY_PROVIDER_TYPE parameter; without this grant, pass --idp).
GRANT SELECT ON SYS.V_$PARAMETER TO &oam_policy_admin;
-- This script creates the runtime pool account itself (section 3). For `oam-admin
-- runtime-login create` to make further ones, the administrator would also need CREATE USER,
-- DROP USER, and CREATE SESSION plus CREATE END USER SECURITY CONTEXT WITH ADMIN OPTION; they
-- are not granted here on purpose (CREATE USER is a DBA-level power).

-- 2. The schema owner ---------------------------------------------------------------------------
-- Tables (identity columns need CREATE SEQUENCE), the purge job (CREATE JOB; without it the
-- store still works and expired rows are purged only by `oam-admin purge-expired`), in-database
-- embedding models (CREATE MINING MODEL, for DBMS_VECTOR.LOAD_ONNX_MODEL), and CTX_DDL for the
-- Oracle Text index of a store whose keyword index syncs manually. The database write audit
-- (`oam-admin audit enable`) adds row triggers and a small package to the owner's schema:
-- CREATE TRIGGER and CREATE PROCEDURE.
CREATE USER IF NOT EXISTS &oam_owner IDENTIFIED BY "&oam_owner_password"
    DEFAULT TABLESPACE &oam_tablespace QUOTA &oam_quota ON &oam_tablespace;
ALTER USER &oam_owner QUOTA &oam_quota ON &oam_tablespace;
GRANT CREATE SESSION, CREATE TABLE, CREATE SEQUENCE TO &oam_owner;
GRANT CREATE JOB TO &oam_owner;
GRANT CREATE MINING MODEL TO &oam_owner;
GRANT CREATE TRIGGER, CREATE PROCEDURE TO &oam_owner;
GRANT EXECUTE ON CTXSYS.CTX_DDL TO &oam_owner;

-- 3. The runtime pool account ------------------------------------------------------------------
-- Exactly CREATE SESSION and CREATE END USER SECURITY CONTEXT (Deep Data Security Guide 9.1.1:
-- without the second the database refuses every end-user security context, ORA-52605). No
-- quota, no object privilege: the protected tables are reached only through data grants.
CREATE USER IF NOT EXISTS &oam_runtime IDENTIFIED BY "&oam_runtime_password";
GRANT CREATE SESSION, CREATE END USER SECURITY CONTEXT TO &oam_runtime;

UNDEFINE oam_policy_admin_password
UNDEFINE oam_owner_password
UNDEFINE oam_runtime_password
