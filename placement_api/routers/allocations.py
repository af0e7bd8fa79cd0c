"""Routes for allocations."""

from fastapi import APIRouter

router = APIRouter(tags=["allocations"])
