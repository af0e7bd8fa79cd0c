"""Routes for usages."""

from fastapi import APIRouter

router = APIRouter(tags=["usages"])
