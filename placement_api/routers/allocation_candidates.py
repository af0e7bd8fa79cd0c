"""Routes for allocation_candidates."""

from fastapi import APIRouter

router = APIRouter(tags=["allocation_candidates"])
