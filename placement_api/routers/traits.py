"""Routes for traits."""

from fastapi import APIRouter

router = APIRouter(tags=["traits"])
